//go:build !linux

package kvstore

import "unsafe"

// populatePages does nothing off Linux: the caller's writes map the pages one by one.
func populatePages(p unsafe.Pointer, n uintptr) error { return nil }
