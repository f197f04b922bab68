package kvstore

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// populatePages maps every whole page of a range fresh from the OS, and nothing of the
// pages the range only partly covers (they may hold other objects: the caller's writes
// map those).
func TestPopulatePagesMapsWholePagesOfTheRange(t *testing.T) {
	const pages = 64
	mem, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	resident := func() []byte {
		t.Helper()
		v := make([]byte, pages)
		_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&mem[0])), uintptr(len(mem)),
			uintptr(unsafe.Pointer(&v[0])))
		if errno != 0 {
			t.Fatal(errno)
		}
		for i := range v {
			v[i] &= 1
		}
		return v
	}
	for i, r := range resident() {
		if r != 0 {
			t.Fatalf("page %d resident before anything touched it", i)
		}
	}
	// From the middle of page 1 to the middle of page 40: pages 2..39 are whole.
	if err := populatePages(unsafe.Pointer(&mem[pageSize+100]), 39*pageSize); err != nil {
		t.Skipf("MADV_POPULATE_WRITE: %v (Linux before 5.14)", err)
	}
	for i, r := range resident() {
		if want := byte(0); i >= 2 && i < 40 {
			want = 1
			if r != want {
				t.Fatalf("page %d of the range not mapped", i)
			}
		} else if r != want {
			t.Fatalf("page %d, outside the range's whole pages, mapped", i)
		}
	}
}
