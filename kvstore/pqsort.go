package kvstore

// pqsort is Redis's pqsort.c (Bentley and McIlroy's quicksort, from NetBSD) for a slice:
// it sorts a well enough that a[lrange..rrange] hold what a full sort would put there,
// skipping the partitions outside that range. It is not stable, and GEORADIUS ... COUNT
// returns what it leaves among equal distances, so it is ported comparison for
// comparison and swap for swap: as redis-server 7.0.15 sorts, which does not switch to an
// insertion sort when a partition swapped nothing (the swap_cnt of other versions).
func pqsort[T any](a []T, cmp func(x, y *T) int, lrange, rrange int) {
	pqsortPart(a, 0, len(a), cmp, lrange, rrange)
}

func med3[T any](a []T, i, j, k int, cmp func(x, y *T) int) int {
	if cmp(&a[i], &a[j]) < 0 {
		switch {
		case cmp(&a[j], &a[k]) < 0:
			return j
		case cmp(&a[i], &a[k]) < 0:
			return k
		}
		return i
	}
	switch {
	case cmp(&a[j], &a[k]) > 0:
		return j
	case cmp(&a[i], &a[k]) < 0:
		return i
	}
	return k
}

// vecswap swaps the n elements from i with the n from j.
func vecswap[T any](a []T, i, j, n int) {
	for ; n > 0; n-- {
		a[i], a[j] = a[j], a[i]
		i++
		j++
	}
}

func insertionSort[T any](a []T, base, n int, cmp func(x, y *T) int) {
	for m := base + 1; m < base+n; m++ {
		for l := m; l > base && cmp(&a[l-1], &a[l]) > 0; l-- {
			a[l], a[l-1] = a[l-1], a[l]
		}
	}
}

// pqsortPart sorts the n elements from base.
func pqsortPart[T any](a []T, base, n int, cmp func(x, y *T) int, lrange, rrange int) {
	for {
		if n < 7 {
			insertionSort(a, base, n, cmp)
			return
		}
		m := base + n/2
		if n > 7 {
			l, h := base, base+n-1
			if n > 40 {
				d := n / 8
				l = med3(a, l, l+d, l+2*d, cmp)
				m = med3(a, m-d, m, m+d, cmp)
				h = med3(a, h-2*d, h-d, h, cmp)
			}
			m = med3(a, l, m, h, cmp)
		}
		a[base], a[m] = a[m], a[base]
		pa, pb := base+1, base+1
		pc, pd := base+n-1, base+n-1
		for {
			for pb <= pc {
				r := cmp(&a[pb], &a[base])
				if r > 0 {
					break
				}
				if r == 0 {
					a[pa], a[pb] = a[pb], a[pa]
					pa++
				}
				pb++
			}
			for pb <= pc {
				r := cmp(&a[pc], &a[base])
				if r < 0 {
					break
				}
				if r == 0 {
					a[pc], a[pd] = a[pd], a[pc]
					pd--
				}
				pc--
			}
			if pb > pc {
				break
			}
			a[pb], a[pc] = a[pc], a[pb]
			pb++
			pc--
		}
		pn := base + n
		r := min(pa-base, pb-pa)
		vecswap(a, base, pb-r, r)
		r = min(pd-pc, pn-pd-1)
		vecswap(a, pb, pn-r, r)
		// the partitions left of and right of the pivots, sorted only where they
		// overlap [lrange, rrange]
		if r = pb - pa; r > 1 && !(rrange < base || lrange > base+r-1) {
			pqsortPart(a, base, r, cmp, lrange, rrange)
		}
		r = pd - pc
		if r <= 1 {
			return
		}
		base, n = pn-r, r
		if rrange < base || lrange > base+n-1 {
			return
		}
	}
}
