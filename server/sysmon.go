package server

import "strings"

// The Go runtime's monitor thread, sysmon, sleeps 20 µs to 10 ms between rounds. When
// every P is idle it goes into a deep sleep instead, and the next goroutine to enter a
// system call wakes it (a futex) and sets it back to 20 µs rounds, in the bet that it
// will have Ps to retake from system calls soon. It then retakes the P of any goroutine
// it finds in a system call for longer than a round (a loopback write that delivers to
// the reader's socket often takes that long) and hands it to another thread, which
// must be woken.
//
// A cluster member is idle between every two datagrams, so it lives in that cycle:
// a wake-up of sysmon per datagram, 20 µs rounds while it works, and a thread hand-off
// at every retake. Counted over 3 s of redis-benchmark SET -P 1 -c 50 on three offload
// members: the leader's threads switched 40,196 times, 17,369 of them sysmon's; a
// follower's 25,562 times, 14,199 of them sysmon's; finish_task_switch was 30% of a
// follower's CPU samples (perf).
//
// sysmon skips the deep sleep while the scheduler trace is on (GODEBUG=schedtrace=N),
// so that the trace comes out on time. Its rounds then back off to 10 ms as they find
// nothing to retake, and stay there until a system call outlasts a round.
// SysmonEnv turns the trace on with the longest period there is, 2^31-1 ms
// (24.8 days), so no trace is written in practice: the runtime writes its first line
// once that long has passed on the monotonic clock (that is, since boot: a host up for
// longer writes one SCHED line at start), and the report of a crash (an unrecovered
// panic, a fatal error) begins with the scheduler's state. The cost is a sysmon round
// every 10 ms while the process idles, and that a P held in a long system call (an
// fsync) is handed to another thread only after up to 10 ms, as it already is in a
// process that stays busy.
//
// Measured with and without (the same binary, GODEBUG=schedtrace=2000000000 in the
// environment; two alternating runs each, three members, -d 3):
//
//	offload SET -P 1: 59.0k / 58.7k -> 67.2k / 69.2k ops/s; -P 16: 441k / 440k -> 472k / 484k
//	raft    SET -P 1: 59.1k / 58.3k -> 67.0k / 68.5k ops/s; -P 16: 428k / 414k -> 443k / 468k
//	offload, --fsync always, -P 1: 22.9k / 24.0k -> 28.0k / 26.5k ops/s
//	memcaslap set-only, 3 offload members: 68.4k / 58.9k -> 74.8k / 74.0k TPS
//	memcaslap set-only, one node (three runs): 115k / 110k / 119k -> 125k / 126k / 123k TPS
//	redis-benchmark SET -P 16 -n 2000000, one node (three alternating runs, without =
//	GODEBUG=schedtrace=0): 829k / 853k / 857k -> 832k / 849k / 867k
//
// A single node rarely idles under load, so it gains less, and its pipelined SET is the
// same within the machine's noise.
// The threads of the leader then switched 5,847 times in the 3 s, and a follower's
// 14,964 times, one per datagram.
const schedtraceSetting = "schedtrace=2147483647"

// SysmonEnv returns environ with GODEBUG set to keep the runtime's sysmon thread out
// of its deep sleep (see above), and true; or false when GODEBUG already sets
// schedtrace (the user's choice stands). The runtime reads schedtrace only when the
// process starts, so a process that wants it must run again with this environment
// (cmd/nanokv re-executes itself with it).
func SysmonEnv(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	godebug, seen := "", false
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			if !seen { // the first one counts, as in os.Getenv
				godebug, seen = v, true
			}
			continue
		}
		out = append(out, kv)
	}
	gd, ok := withSchedtrace(godebug)
	if !ok {
		return environ, false
	}
	return append(out, "GODEBUG="+gd), true
}

// withSchedtrace returns godebug with the schedtrace setting added, or false when it
// already has one.
func withSchedtrace(godebug string) (string, bool) {
	for _, kv := range strings.Split(godebug, ",") {
		if k, _, _ := strings.Cut(kv, "="); k == "schedtrace" {
			return godebug, false
		}
	}
	if godebug == "" {
		return schedtraceSetting, true
	}
	return godebug + "," + schedtraceSetting, true
}
