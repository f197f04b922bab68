package server

import "testing"

func TestGCPercentKeepsHeadroom(t *testing.T) {
	cases := []struct {
		live  uint64
		ratio float64
		want  int
	}{
		{0, singleHeadroom, maxPercent},
		{1 << 20, singleHeadroom, maxPercent}, // tiny heap: headroom floor, capped
		{32 << 20, singleHeadroom, 100},       // the floor equals the live heap
		{256 << 20, singleHeadroom, 25},       // large heap: 25% headroom
		{8 << 30, singleHeadroom, 25},
		{1 << 20, memberHeadroom, maxPercent},
		{256 << 20, memberHeadroom, 100}, // a cluster member: the runtime's default
		{8 << 30, memberHeadroom, 100},
	}
	for _, c := range cases {
		if got := gcPercentFor(c.live, c.ratio); got != c.want {
			t.Errorf("live %d MiB, ratio %v: GOGC %d, want %d", c.live>>20, c.ratio, got, c.want)
		}
	}
}
