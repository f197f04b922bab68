package server

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Redis's save parameter: "seconds changes" pairs, each a point at which the server
// snapshots by itself, when at least changes writes were applied since the last snapshot
// and more than seconds have passed since it. Deployment scripts and test suites set it,
// most often to "" to turn automatic snapshots off. nanokv persists through its WAL and
// snapshots by itself when the WAL grows (raft.log-max-file-size); save points are
// snapshots on top of that, which bound how much WAL a restart replays by time as well as
// by size. They are off by default ("", where Redis's default is "3600 1 300 100 60
// 10000"): the WAL already keeps every write.

// savePoint is one pair of the save parameter.
type savePoint struct {
	seconds int64
	// changes is a C int in Redis: a larger number wraps, and 2^63-1 becomes -1, which
	// every count of changes reaches
	changes int32
}

// saveRetryDelay is how long a failed automatic snapshot waits before save points try
// another (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const saveRetryDelay = 5

var errSaveParams = errors.New("Invalid save parameters")

// parseSavePoints reads a value of the save parameter as Redis 7.0's CONFIG SET does: the
// value split at every single space (so that a doubled space makes an empty word, read
// as 0), an even number of words, each a whole number as strtoll reads one, seconds at
// least 1 and changes at least 0.
func parseSavePoints(v string) ([]savePoint, error) {
	if v == "" {
		return nil, nil
	}
	words := strings.Split(v, " ")
	if len(words)%2 != 0 {
		return nil, errSaveParams
	}
	points := make([]savePoint, 0, len(words)/2)
	for i := 0; i < len(words); i += 2 {
		sec, ok1 := strtoll(words[i])
		ch, ok2 := strtoll(words[i+1])
		if !ok1 || !ok2 || sec < 1 || ch < 0 {
			return nil, errSaveParams
		}
		points = append(points, savePoint{seconds: sec, changes: int32(ch)})
	}
	return points, nil
}

// strtoll reads a whole word as C's strtoll(s, &end, 10) with *end == '\0': leading
// white space and a sign are allowed, the empty word is 0, and a number beyond the
// range of a long long saturates.
func strtoll(s string) (int64, bool) {
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	digits := t
	if digits != "" && (digits[0] == '+' || digits[0] == '-') {
		if digits = digits[1:]; digits == "" {
			return 0, false // a sign alone: strtoll reads nothing, and the sign is left over
		}
	}
	for _, c := range []byte(digits) { // one sign at most: "+-5" is no number
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	if digits == "" {
		return 0, true
	}
	n, _ := strconv.ParseInt(t, 10, 64) // out of range, ParseInt saturates as strtoll does
	return n, true
}

// formatSavePoints writes save points as CONFIG GET save shows them.
func formatSavePoints(points []savePoint) string {
	var b strings.Builder
	for i, p := range points {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatInt(p.seconds, 10))
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(int64(p.changes), 10))
	}
	return b.String()
}

// saveDue reports whether a save point asks for a snapshot now, as Redis's serverCron
// decides: enough changes, more than its seconds since the last snapshot, and the last
// automatic snapshot either succeeded or was tried more than saveRetryDelay ago.
func saveDue(points []savePoint, changes uint64, now, lastSave int64, lastOK bool, lastTry int64) bool {
	if !lastOK && now-lastTry <= saveRetryDelay {
		return false
	}
	for _, p := range points {
		enough := p.changes < 0 || changes >= uint64(p.changes)
		if enough && now-lastSave > p.seconds {
			return true
		}
	}
	return false
}

// checkSavePoints checks a value of CONFIG SET save and returns what sets it.
func (s *Server) checkSavePoints(v string) (set func() error, err error) {
	points, err := parseSavePoints(v)
	if err != nil {
		return nil, err
	}
	if len(points) > 0 && s.cfg.MemoryOnly {
		return nil, errors.New(strings.TrimPrefix(errNoSnapshots.Error(), "ERR "))
	}
	return func() error { s.savePoints.Store(&points); return nil }, nil
}

// runSavePoints checks the save points once a second, as Redis's serverCron does, and
// starts a background snapshot when one is due.
func (s *Server) runSavePoints() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	lastTry := int64(0)
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		points := s.savePoints.Load()
		if points == nil || len(*points) == 0 {
			continue
		}
		si, ok := s.snapshotInfo()
		if !ok || si.Writing {
			continue
		}
		now := time.Now().Unix()
		if !saveDue(*points, si.ChangesSinceIt, now, s.LastSave(), si.LastOK, lastTry) {
			continue
		}
		lastTry = now
		if err := s.Save(true); err != nil && !errors.Is(err, errSaveRunning) {
			s.logf("server: save point: %v", err)
		}
	}
}
