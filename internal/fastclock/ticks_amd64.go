package fastclock

const haveTicks = true

// ticks reads the time-stamp counter (RDTSC, without a fence: the reading may move by
// a few instructions, which a section timed in microseconds cannot see).
func ticks() int64
