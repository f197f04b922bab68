package kvstore

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc64"
	"io"
	"strconv"
)

// An RDB file of the keyspace, as redis-cli --rdb takes a backup with SYNC: Redis 7.0's
// format (version 10), which redis-server loads. It is made from a snapshot, not from the
// live store: a snapshot is the state at one index, written without stopping the applier
// (BeginSnapshot), and the RDB is that state in Redis's encodings, key by key as they
// come, in the same plain encodings as DUMP.
//
//	"REDIS0010" aux* ((SELECTDB db)? (EXPIRETIME_MS ms)? type key value)* FUNCTION2* EOF crc64
//
// What Redis has no place for stays out: memcached flags, the ZooKeeper tree, the
// script cache (Redis 7.0 does not save it either), and keys whose TTL has passed, which
// no read finds any more. The databases' keys come in the snapshot's order, which
// interleaves them; an RDB may select a database any number of times.

// RDB opcodes (rdb.h).
const (
	rdbOpAux         = 0xfa
	rdbOpSelectDB    = 0xfe
	rdbOpExpireTimeM = 0xfc
	rdbOpEOF         = 0xff
)

// RDBOptions says what WriteRDB writes.
type RDBOptions struct {
	RedisVersion string // the version the file says wrote it
	// Now (unix ms) is the file's creation time, and the clock past which a key's TTL
	// has expired it.
	Now int64
	// Keys and Functions are the parts of the state the file holds (REPLCONF
	// rdb-filter-only asks for the functions alone, or for nothing).
	Keys, Functions bool
}

// WriteRDB writes the state in snap (a snapshot, as Snapshot writes it) to w as an RDB
// file. snap is not read when the file is to hold neither keys nor functions.
func WriteRDB(snap io.Reader, w io.Writer, opt RDBOptions) error {
	out := &rdbWriter{w: bufio.NewWriterSize(w, 1<<16), crc: ^uint64(0)}
	b := fmt.Appendf(nil, "REDIS%04d", rdbVersion)
	for _, kv := range [][2]string{{"redis-ver", opt.RedisVersion}, {"redis-bits", "64"}, {"ctime", strconv.FormatInt(opt.Now/1000, 10)}, {"aof-base", "0"}} {
		b = rdbAppendString(rdbAppendString(append(b, rdbOpAux), kv[0]), kv[1])
	}
	out.write(b)
	if opt.Keys || opt.Functions {
		if err := out.state(snap, opt); err != nil {
			return err
		}
	}
	out.write([]byte{rdbOpEOF})
	return out.finish()
}

// state writes the keys and function libraries of snap, as opt asks.
func (out *rdbWriter) state(snap io.Reader, opt RDBOptions) error {
	r := &snapReader{r: bufio.NewReaderSize(snap, 1<<16)}
	head, err := r.readHead()
	if err != nil {
		return err
	}
	flushed := head.mcFlushLive != 0 && opt.Now >= head.mcFlushLive*1000 // database 0 reads as empty
	var b []byte
	db := -1
	err = r.readShards(func(int, int, uint64, map[string]uint64) {}, func(_, kdb int, key string, it item, ttl int64) {
		if !opt.Keys || it.hasTTL && ttl <= opt.Now || kdb == 0 && flushed {
			return
		}
		b = b[:0]
		if kdb != db {
			db = kdb
			b = rdbAppendLen(append(b, rdbOpSelectDB), uint64(db))
		}
		if it.hasTTL {
			b = binary.LittleEndian.AppendUint64(append(b, rdbOpExpireTimeM), uint64(ttl))
		}
		t, ok := rdbType(it.typ)
		if !ok {
			out.fail(fmt.Errorf("kvstore: RDB of a %s key", it.typ))
			return
		}
		b = rdbAppendValue(rdbAppendString(append(b, t), key), it)
		out.write(b)
	})
	if err != nil {
		return err
	}
	_, libs, err := r.readTail(head.magic, New())
	if err != nil {
		return err
	}
	if opt.Functions {
		b = b[:0]
		for _, lib := range libs {
			b = rdbAppendString(append(b, rdbOpcodeFunction2), lib.code)
		}
		out.write(b)
	}
	return out.err
}

// rdbWriter writes an RDB file and the CRC-64 of what it wrote, which ends the file.
type rdbWriter struct {
	w   *bufio.Writer
	crc uint64 // crc64.Update's state: redisCRC64 of the bytes so far is ^crc
	err error
}

func (o *rdbWriter) write(b []byte) {
	if o.err != nil {
		return
	}
	o.crc = crc64.Update(o.crc, crcJones, b)
	_, o.err = o.w.Write(b)
}

func (o *rdbWriter) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

func (o *rdbWriter) finish() error {
	if o.err != nil {
		return o.err
	}
	if _, err := o.w.Write(binary.LittleEndian.AppendUint64(nil, ^o.crc)); err != nil {
		return err
	}
	return o.w.Flush()
}
