// Package zkproto is nanokv's ZooKeeper frontend: the jute wire codec (jute.go, and one
// typed struct per record of ZooKeeper 3.8's zookeeper.jute in records.go), client
// sessions, watches, the translation of ZooKeeper operations into kvstore transactions,
// and the four-letter words.
//
// The codec is plain functions on bytes: ParseFrame cuts a length-prefixed packet out of
// the read buffer, ParseConnectRequest and ParseRequest decode it into typed records, and
// the Append functions and methods render replies into a caller's buffer. Every length read
// from the wire is checked against the bytes that remain before anything is allocated,
// and everything the decoders return is copied out of the (reused) read buffer.
//
// The wire vocabulary (opcodes, error codes, Stat, ACL) is kvstore's (kvstore/zktypes.go);
// this package knows nothing of how the data tree is stored or replicated.
package zkproto
