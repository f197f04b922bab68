package memlimit

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGaugeLimits(t *testing.T) {
	var none *Gauge
	if none.Over() || none.Limit() != 0 || none.Used() != 0 {
		t.Fatal("a nil gauge must have no limit and never be over")
	}
	var g Gauge
	g.Sample()
	if g.Over() || g.Used() == 0 {
		t.Fatalf("without a limit: over %v, used %d", g.Over(), g.Used())
	}
	g.SetLimit(1)
	if !g.Over() || g.Limit() != 1 {
		t.Fatalf("limit 1 byte: over %v, limit %d", g.Over(), g.Limit())
	}
	g.SetLimit(1 << 50)
	if g.Over() {
		t.Fatal("over a limit of a petabyte")
	}
	g.SetLimit(1)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if cur, total := g.OverTime(); cur > 0 && total >= cur {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("over the limit, and OverTime says it has not been")
		}
	}
	g.SetLimit(0)
	if g.Over() || g.Limit() != 0 {
		t.Fatal("still over once the limit is removed")
	}
	if cur, total := g.OverTime(); cur != 0 || total <= 0 {
		t.Fatalf("under the limit again: OverTime %v, %v; want 0 and the time it was over", cur, total)
	}
	g.SetLimit(-5)
	if g.Limit() != 0 || g.Over() {
		t.Fatalf("a negative limit is no limit, got %d", g.Limit())
	}
}

var sink []byte

// Garbage is not used memory: a heap over the limit only with what the next collection
// frees is collected before the gauge decides, as Redis's allocator would not have
// counted it. Automatic collection is off, so only the gauge's own can free it.
func TestGaugeCollectsGarbageBeforeDeciding(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	var g Gauge
	g.Sample()
	g.SetLimit(int64(g.Used()) + 32<<20)
	sink = make([]byte, 64<<20)
	for i := range sink {
		sink[i] = byte(i) // touch it: the heap holds it
	}
	sink = nil
	if g.Sample(); g.Over() {
		t.Fatalf("over with %d bytes used against %d: the garbage counted", g.Used(), g.Limit())
	}
	sink = make([]byte, 64<<20)
	if g.Sample(); !g.Over() {
		t.Fatalf("not over with 64 MiB live past a limit 32 MiB over the heap (used %d, limit %d)", g.Used(), g.Limit())
	}
	sink = nil
}
