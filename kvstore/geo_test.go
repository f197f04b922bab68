package kvstore

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The expected replies are what redis-server 7.0.15 answers for the same commands, in
// the same order, on an empty server.
func TestGeoCommands(t *testing.T) {
	h := newHarness(t)
	// GEOADD, GEOPOS, GEODIST, GEOHASH
	h.expect(2, "GEOADD", "g", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania")
	h.expectErr("ERR invalid longitude,latitude pair 181.000000,10.000000", "GEOADD", "g", "181", "10", "x")
	h.expectErr("ERR invalid longitude,latitude pair 10.000000,86.000000", "GEOADD", "g", "10", "86", "x")
	h.expectErr("ERR invalid longitude,latitude pair inf,10.000000", "GEOADD", "g", "inf", "10", "x")
	h.expectErr("ERR value is not a valid float", "GEOADD", "g", "a", "10", "x")
	h.expectErr("ERR syntax error", "GEOADD", "g", "NX", "XX", "1", "1", "x")
	h.expect(1, "GEOADD", "g", "CH", "13.361389", "38.115556", "Palermo", "1", "2", "y")
	h.expect(1, "GEOADD", "g", "XX", "CH", "2", "2", "y", "3", "3", "zz")
	h.expectErr("ERR syntax error", "GEOADD", "g", "NX", "1", "1")
	h.expectErr("ERR syntax error", "GEOADD", "g", "GT", "1", "1", "x")
	h.expect(3479099956230698.0, "ZSCORE", "g", "Palermo")
	h.expect([]any{[]any{"13.36138933897018433", "38.11555639549629859"}, []any{"15.08726745843887329", "37.50266842333162032"}, nil, []any{"2.00000256299972534", "2.0000001856465488"}}, "GEOPOS", "g", "Palermo", "Catania", "nosuch", "y")
	h.expect([]any{nil, nil}, "GEOPOS", "nokey", "a", "b")
	h.expect([]any{}, "GEOPOS", "g")
	h.expect("166274.1516", "GEODIST", "g", "Palermo", "Catania")
	h.expect("166.2742", "GEODIST", "g", "Palermo", "Catania", "km")
	h.expect("103.3182", "GEODIST", "g", "Palermo", "Catania", "MI")
	h.expect("545518.8700", "GEODIST", "g", "Palermo", "Catania", "ft")
	h.expectErr("ERR syntax error", "GEODIST", "g", "Palermo", "Catania", "KM", "foo")
	h.expectErr("ERR unsupported unit provided. please use M, KM, FT, MI", "GEODIST", "g", "Palermo", "Catania", "xx")
	h.expect(nil, "GEODIST", "g", "Palermo", "nosuch")
	h.expect(nil, "GEODIST", "nokey", "a", "b")
	h.expect("0.0000", "GEODIST", "g", "Palermo", "Palermo")
	h.expect([]any{"sqc8b49rny0", "sqdtr74hyu0", nil}, "GEOHASH", "g", "Palermo", "Catania", "nosuch")
	h.expect([]any{nil}, "GEOHASH", "nokey", "a")
	h.expect(1, "RPUSH", "l", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOPOS", "l", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "GEODIST", "l", "a", "b")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOHASH", "l", "a")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOADD", "l", "1", "1", "a")
	h.expect(3, "GEOADD", "g", "180", "85.05112878", "n1", "-180", "-85.05112878", "n2", "0", "0", "n3")
	h.expect([]any{[]any{"180", "85.0511287799999991"}, []any{"-179.99999731779098511", "-85.05112751263942528"}, []any{"0.00000268220901489", "0.00000126736058093"}}, "GEOPOS", "g", "n1", "n2", "n3")
	h.expect([]any{"bp05b5048p0", "00bh0hbj200", "s0000000000"}, "GEOHASH", "g", "n1", "n2", "n3")
	h.expect(7, "ZADD", "z", "0", "a", "-1", "b", "1.5", "c", "1e20", "d", "inf", "e", "-inf", "f", "4503599627370496", "g")
	h.expect([]any{[]any{"-179.99999731779098511", "-85.05112751263942528"}, []any{"180", "85.0511287799999991"}, []any{"-179.99999731779098511", "-85.05112497791824921"}, []any{"-179.99999731779098511", "-85.05112751263942528"}, []any{"-179.99999731779098511", "-85.05112751263942528"}, []any{"180", "-85.05112751263942528"}, []any{"-179.99999731779098511", "85.0511287799999991"}}, "GEOPOS", "z", "a", "b", "c", "d", "e", "f", "g")
	h.expect([]any{"00bh0hbj200", "bp05b5048p0", "00bh0hbj200", "00bh0hbj200"}, "GEOHASH", "z", "a", "b", "d", "f")
	h.expect("18919844.5891", "GEODIST", "z", "a", "b")
	// searches
	h.expect(5, "GEOADD", "s", "13.583333", "37.316667", "Agrigento", "12.758489", "38.788135", "Trapani", "14.2681", "40.8518", "Napoli", "12.4964", "41.9028", "Roma", "9.19", "45.4642", "Milano")
	h.expect([]any{"Agrigento"}, "GEORADIUS", "s", "15", "37", "200", "km")
	h.expect([]any{"Agrigento"}, "GEORADIUS", "s", "15", "37", "200", "km", "ASC")
	h.expect([]any{[]any{"Agrigento", "130.4235"}}, "GEORADIUS", "s", "15", "37", "200", "km", "DESC", "WITHDIST")
	h.expect([]any{[]any{"Agrigento", "130.4235", 3479030013248308, []any{"13.5833314061164856", "37.31666804993816555"}}, []any{"Trapani", "279.7405", 3479273021651468, []any{"12.7584877610206604", "38.78813451624225195"}}}, "GEORADIUS", "s", "15", "37", "500", "km", "WITHCOORD", "WITHDIST", "WITHHASH", "COUNT", "2")
	h.expect([]any{"Agrigento", "Trapani"}, "GEORADIUS", "s", "15", "37", "500", "km", "COUNT", "2", "ANY")
	h.expect([]any{"Agrigento", "Trapani", "Roma", "Napoli", "Milano"}, "GEORADIUS", "s", "15", "37", "5000", "km")
	h.expect([]any{}, "GEORADIUS", "s", "15", "37", "1", "m")
	h.expect([]any{}, "GEORADIUS", "s", "15", "37", "0", "km")
	h.expectErr("ERR radius cannot be negative", "GEORADIUS", "s", "15", "37", "-1", "km")
	h.expectErr("ERR need numeric radius", "GEORADIUS", "s", "15", "37", "x", "km")
	h.expectErr("ERR unsupported unit provided. please use M, KM, FT, MI", "GEORADIUS", "s", "15", "37", "1", "parsec")
	h.expectErr("ERR COUNT must be > 0", "GEORADIUS", "s", "15", "37", "100", "km", "COUNT", "0")
	h.expectErr("ERR value is not an integer or out of range", "GEORADIUS", "s", "15", "37", "100", "km", "COUNT", "x")
	h.expectErr("ERR the ANY argument requires COUNT argument", "GEORADIUS", "s", "15", "37", "100", "km", "ANY")
	h.expectErr("ERR syntax error", "GEORADIUS", "s", "15", "37", "100", "km", "FOO")
	h.expect(3, "GEORADIUS", "s", "15", "37", "500", "km", "STORE", "dst")
	h.expect([]any{"Agrigento", 3479030013248308.0, "Trapani", 3479273021651468.0, "Napoli", 3480580670016297.0}, "ZRANGE", "dst", "0", "-1", "WITHSCORES")
	h.expect(3, "GEORADIUS", "s", "15", "37", "500", "km", "STOREDIST", "dst2", "COUNT", "3", "DESC")
	h.expect([]any{"Agrigento", 130.42348706714702, "Trapani", 279.7404521356343, "Napoli", 433.0719695106293}, "ZRANGE", "dst2", "0", "-1", "WITHSCORES")
	h.expectErr("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options", "GEORADIUS", "s", "15", "37", "500", "km", "STORE", "dst", "WITHDIST")
	h.expect(0, "GEORADIUS", "s", "15", "37", "1", "km", "STORE", "dst")
	h.expect(0, "EXISTS", "dst")
	h.expect(0, "GEORADIUS", "nokey", "15", "37", "500", "km", "STORE", "dst2")
	h.expect(0, "EXISTS", "dst2")
	h.expect([]any{}, "GEORADIUS", "nokey", "15", "37", "500", "km")
	h.expectErr("ERR syntax error", "GEORADIUS_RO", "s", "15", "37", "500", "km", "STORE", "dst")
	h.expect([]any{[]any{"Agrigento", "130.4235"}, []any{"Trapani", "279.7405"}, []any{"Napoli", "433.0720"}}, "GEORADIUS_RO", "s", "15", "37", "500", "km", "WITHDIST", "ASC")
	h.expect([]any{[]any{"Roma", "0.0000"}, []any{"Napoli", "188.4876"}}, "GEORADIUSBYMEMBER", "s", "Roma", "300", "km", "WITHDIST", "ASC")
	h.expectErr("ERR could not decode requested zset member", "GEORADIUSBYMEMBER", "s", "nosuch", "300", "km")
	h.expect([]any{}, "GEORADIUSBYMEMBER", "nokey", "nosuch", "300", "km")
	h.expect(2, "GEORADIUSBYMEMBER", "s", "Roma", "300", "km", "STORE", "dst")
	h.expect([]any{"Agrigento", "Milano", "Trapani", "Napoli", "Roma"}, "GEORADIUSBYMEMBER_RO", "s", "Roma", "600", "km", "DESC")
	h.expect([]any{"Agrigento"}, "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC")
	h.expect([]any{[]any{"Roma", "0.0000", []any{"12.49639838933944702", "41.90279987683795326"}}, []any{"Napoli", "188.4876", []any{"14.26809936761856079", "40.85180056060848841"}}}, "GEOSEARCH", "s", "FROMMEMBER", "Roma", "BYBOX", "600", "400", "km", "ASC", "WITHCOORD", "WITHDIST")
	h.expect([]any{"Roma"}, "GEOSEARCH", "s", "FROMMEMBER", "Roma", "BYBOX", "600", "400", "km", "COUNT", "1", "ANY")
	h.expectErr("ERR could not decode requested zset member", "GEOSEARCH", "s", "FROMMEMBER", "nosuch", "BYRADIUS", "100", "km")
	h.expect([]any{}, "GEOSEARCH", "nokey", "FROMMEMBER", "nosuch", "BYRADIUS", "100", "km")
	h.expectErr("ERR syntax error", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "FROMMEMBER", "Roma", "BYRADIUS", "100", "km")
	h.expectErr("ERR wrong number of arguments for 'geosearch' command", "GEOSEARCH", "s", "BYRADIUS", "100", "km")
	h.expectErr("ERR syntax error", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "BYBOX", "1", "1", "km")
	h.expectErr("ERR exactly one of BYRADIUS and BYBOX can be specified for GEOSEARCH", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "COUNT", "2")
	h.expectErr("ERR height or width cannot be negative", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km")
	h.expectErr("ERR need numeric width", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYBOX", "x", "1", "km")
	h.expectErr("ERR need numeric height", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYBOX", "1", "x", "km")
	h.expectErr("ERR unsupported unit provided. please use M, KM, FT, MI", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "yards")
	h.expectErr("ERR syntax error", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "STORE", "dst")
	h.expectErr("ERR syntax error", "GEOSEARCH", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "100", "km", "STOREDIST")
	h.expect([]any{"Roma"}, "geosearch", "s", "frommember", "Roma", "byradius", "10", "km")
	h.expect(2, "GEOSEARCHSTORE", "dst", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km")
	h.expect([]any{"Agrigento", 3479030013248308.0, "Trapani", 3479273021651468.0}, "ZRANGE", "dst", "0", "-1", "WITHSCORES")
	h.expect(2, "GEOSEARCHSTORE", "dst", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km", "STOREDIST", "COUNT", "2")
	h.expect([]any{"Agrigento", 130.42348706714702, "Trapani", 279.7404521356343}, "ZRANGE", "dst", "0", "-1", "WITHSCORES")
	h.expectErr("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options", "GEOSEARCHSTORE", "dst", "s", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km", "WITHDIST")
	h.expect(0, "GEOSEARCHSTORE", "dst", "nokey", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km")
	h.expect(0, "EXISTS", "dst")
	h.expectErr("WRONGTYPE Operation against a key holding the wrong kind of value", "GEOSEARCH", "l", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km")
	h.expectErr("ERR invalid longitude,latitude pair 0.000000,89.000000", "GEOADD", "p", "0", "89", "x")
	h.expect(5, "GEOADD", "p", "0", "85", "n", "0", "-85", "s", "179.9", "0", "e", "-179.9", "0", "w", "0.001", "0.001", "o")
	h.expect([]any{"o", "n", "s"}, "GEOSEARCH", "p", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "ASC")
	h.expect([]any{[]any{"e", "5.6715"}, []any{"w", "16.7211"}}, "GEOSEARCH", "p", "FROMLONLAT", "179.95", "0.01", "BYRADIUS", "100", "km", "ASC", "WITHDIST")
	h.expect([]any{[]any{"n", "11.1226"}}, "GEOSEARCH", "p", "FROMLONLAT", "0", "84.9", "BYBOX", "3000", "300", "km", "ASC", "WITHDIST")
	h.expect([]any{[]any{"s", "11.1226"}}, "GEOSEARCH", "p", "FROMLONLAT", "0", "-84.9", "BYRADIUS", "100", "km", "WITHDIST")
	// equal distances: which members COUNT keeps, and in what order, is pqsort's
	h.expect(13, "ZADD", "t", "1", "a", "1", "b", "1", "c", "1", "d", "1", "e", "1", "f", "1", "g", "1", "h", "100", "x", "1", "i", "1", "j", "5", "k", "5", "l")
	h.expect([]any{[]any{"x", 100}, []any{"k", 5}, []any{"l", 5}, []any{"d", 1}, []any{"e", 1}}, "GEOSEARCH", "t", "FROMMEMBER", "x", "BYRADIUS", "1", "km", "COUNT", "5", "WITHHASH")
	h.expect([]any{"a", "b", "c"}, "GEOSEARCH", "t", "FROMMEMBER", "x", "BYRADIUS", "1", "km", "COUNT", "3", "DESC")
	h.expect([]any{"x", "k", "l", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, "GEOSEARCH", "t", "FROMMEMBER", "x", "BYRADIUS", "1", "km", "ASC")
	h.expect([]any{"x", "k", "l", "d", "e", "f", "a", "h", "i", "j", "g", "b"}, "GEOSEARCH", "t", "FROMMEMBER", "x", "BYRADIUS", "1", "km", "COUNT", "12")
	h.expect([]any{"a", "b", "c", "d", "e", "f", "g", "h"}, "GEOSEARCH", "t", "FROMMEMBER", "x", "BYRADIUS", "1", "km", "COUNT", "8", "DESC")
	// a partition that swaps nothing: redis-server 7.0.15 goes on partitioning
	h.expect(7, "ZADD", "k17", "1.5", "m5", "2.5", "m0", "2.5", "m6", "3", "m3", "100", "m1", "100", "m2", "100", "m4")
	h.expect([]any{[]any{"m5", "0.0002"}, []any{"m0", "0.0000"}, []any{"m6", "0.0000"}, []any{"m3", "0.0002"}, []any{"m1", "0.0018"}, []any{"m2", "0.0018"}, []any{"m4", "0.0018"}}, "GEORADIUSBYMEMBER_RO", "k17", "m6", "12000", "mi", "WITHDIST")
	h.expect([]any{[]any{"m6", "0.0000"}, []any{"m0", "0.0000"}}, "GEORADIUSBYMEMBER_RO", "k17", "m6", "12000", "mi", "COUNT", "2", "WITHDIST")
}

// pqsort puts in a[lrange..rrange] what a full sort puts there, whatever the ties.
func TestPqsortSortsTheRangeAsked(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		a := make([]int, r.IntN(120))
		for i := range a {
			a[i] = r.IntN(1 + len(a)/3) // many ties
		}
		want := slices.Clone(a)
		slices.Sort(want)
		if len(a) == 0 {
			continue
		}
		lo := r.IntN(len(a))
		hi := lo + r.IntN(len(a)-lo)
		pqsort(a, func(x, y *int) int { return *x - *y }, lo, hi)
		if !slices.Equal(a[lo:hi+1], want[lo:hi+1]) {
			t.Fatalf("pqsort range %d..%d: %v, want %v", lo, hi, a[lo:hi+1], want[lo:hi+1])
		}
		slices.Sort(a)
		if !slices.Equal(a, want) {
			t.Fatal("pqsort lost or duplicated elements")
		}
	}
}

// SORT, GEORADIUS and GEORADIUSBYMEMBER write only with STORE or STOREDIST: without, a
// call takes the read path (the harness routes by Writes, so the cases above ran there).
func TestSearchesWithoutStoreAreReads(t *testing.T) {
	for _, c := range []struct {
		args   string
		writes bool
	}{
		{"GEORADIUS g 15 37 100 km WITHDIST", false},
		{"GEORADIUS g 15 37 100 km STORE d", true},
		{"georadius g 15 37 100 km storedist d", true},
		{"GEORADIUSBYMEMBER g m 100 km COUNT 3", false},
		{"GEORADIUSBYMEMBER g store 100 km", true}, // a member so named: the log, to be safe
		{"SORT l BY w_* LIMIT 0 2", false},
		{"SORT l STORE d", true},
		{"GEOSEARCHSTORE d g FROMMEMBER m BYRADIUS 1 km", true},
		{"GEOSEARCH g FROMMEMBER m BYRADIUS 1 km", false},
		{"SET k v", true},
	} {
		args := bytes.Fields([]byte(c.args))
		if got := Lookup(args[0]).Writes(args); got != c.writes {
			t.Errorf("%s: Writes = %v, want %v", c.args, got, c.writes)
		}
	}
	// the STORE key is a key of the call: locked, and in COMMAND GETKEYS as in Redis
	args := bytes.Fields([]byte("GEORADIUSBYMEMBER k m 100 km STOREDIST d2"))
	if keys := Lookup(args[0]).Keys(nil, args); len(keys) != 2 || string(keys[0]) != "k" || string(keys[1]) != "d2" {
		t.Errorf("keys of %s: %q", args, keys)
	}
	h := newHarness(t)
	h.do("GEOADD", "g", "15", "37", "m")
	var w tree
	h.s.Read(0, h.now, [][]byte{[]byte("GEORADIUS"), []byte("g"), []byte("15"), []byte("37"), []byte("1"), []byte("km"), []byte("STORE"), []byte("d")}, &w)
	if e, ok := w.out[0].(Err); !ok || !strings.Contains(string(e), "read path") {
		t.Fatalf("GEORADIUS ... STORE on the read path: %#v", w.out)
	}
}
