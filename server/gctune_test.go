package server

import "testing"

func TestGCPercentKeepsHeadroom(t *testing.T) {
	cases := []struct {
		live uint64
		want int
	}{
		{0, maxPercent},
		{1 << 20, maxPercent}, // tiny heap: headroom floor, capped
		{32 << 20, 100},       // the floor equals the live heap
		{256 << 20, 25},       // large heap: 25% headroom
		{8 << 30, 25},
	}
	for _, c := range cases {
		if got := gcPercentFor(c.live); got != c.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", c.live>>20, got, c.want)
		}
	}
}
