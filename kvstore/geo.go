package kvstore

import (
	"math"
	"slices"
	"strconv"
)

// Geospatial indexes: Redis's GEO commands over sorted sets. A member's score is a 52-bit
// geohash of its position, interleaved as Redis interleaves it (latitude in the even
// bits), so a geo set is an ordinary sorted set and ZRANGE, ZREM... work on it. The
// arithmetic below follows Redis 7.0's geohash.c and geohash_helper.c operation for
// operation, so that positions, distances and the members a search finds come out
// bit for bit as redis-server's (the differential test compares them).

func init() {
	register(
		&Spec{Name: "geoadd", Arity: -5, Flags: FlagWrite | FlagDenyOOM, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.0", Summary: "Add one or more geospatial items in the geospatial index represented using a sorted set", Run: geoaddCmd},
		&Spec{Name: "geopos", Arity: -2, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.0", Summary: "Returns longitude and latitude of members of a geospatial index", Run: geoposCmd},
		&Spec{Name: "geodist", Arity: -4, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.0", Summary: "Returns the distance between two members of a geospatial index", Run: geodistCmd},
		&Spec{Name: "geohash", Arity: -2, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.0", Summary: "Returns members of a geospatial index as standard geohash strings", Run: geohashCmd},
		&Spec{Name: "georadius", Arity: -6, Flags: FlagWrite | FlagDenyOOM | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.0", Summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point", Run: geoSearchCmd(1, geoByCoords), ReadOnlyCall: withoutStore, MoreKeys: storeKeys},
		&Spec{Name: "georadius_ro", Arity: -6, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.10", Summary: "A read-only variant for GEORADIUS", Run: geoSearchCmd(1, geoByCoords|geoNoStore)},
		&Spec{Name: "georadiusbymember", Arity: -5, Flags: FlagWrite | FlagDenyOOM | FlagReadLookups, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.0", Summary: "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", Run: geoSearchCmd(1, geoByMember), ReadOnlyCall: withoutStore, MoreKeys: storeKeys},
		&Spec{Name: "georadiusbymember_ro", Arity: -5, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "3.2.10", Summary: "A read-only variant for GEORADIUSBYMEMBER", Run: geoSearchCmd(1, geoByMember|geoNoStore)},
		&Spec{Name: "geosearch", Arity: -7, Flags: FlagReadOnly, FirstKey: 1, LastKey: 1, Step: 1, Group: "geo", Since: "6.2.0", Summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", Run: geoSearchCmd(1, geoSearch)},
		&Spec{Name: "geosearchstore", Arity: -8, Flags: FlagWrite | FlagDenyOOM | FlagReadLookups, FirstKey: 1, LastKey: 2, Step: 1, Group: "geo", Since: "6.2.0", Summary: "Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", Run: geoSearchCmd(2, geoSearch|geoSearchStore)},
	)
}

const (
	geoStepMax   = 26 // 52 bits: the precision a score holds
	geoLongMin   = -180
	geoLongMax   = 180
	geoLatMin    = -85.05112878
	geoLatMax    = 85.05112878
	earthRadiusM = 6372797.560856
	mercatorMax  = 20037726.37
	degToRad     = math.Pi / 180.0
)

// geoRange is a coordinate range; geoArea the cell a hash covers.
type geoRange struct{ min, max float64 }

type geoArea struct{ lon, lat geoRange }

// geoHash is a geohash of step bits per coordinate.
type geoHash struct {
	bits uint64
	step uint
}

var (
	geoLongRange = geoRange{geoLongMin, geoLongMax}
	geoLatRange  = geoRange{geoLatMin, geoLatMax}
)

// spread moves the 32 bits of v to the even bits of the result.
func spread(v uint32) uint64 {
	x := uint64(v)
	x = (x | x<<16) & 0x0000FFFF0000FFFF
	x = (x | x<<8) & 0x00FF00FF00FF00FF
	x = (x | x<<4) & 0x0F0F0F0F0F0F0F0F
	x = (x | x<<2) & 0x3333333333333333
	x = (x | x<<1) & 0x5555555555555555
	return x
}

// squash is spread's inverse: the even bits of v, packed.
func squash(v uint64) uint32 {
	x := v & 0x5555555555555555
	x = (x | x>>1) & 0x3333333333333333
	x = (x | x>>2) & 0x0F0F0F0F0F0F0F0F
	x = (x | x>>4) & 0x00FF00FF00FF00FF
	x = (x | x>>8) & 0x0000FFFF0000FFFF
	x = (x | x>>16) & 0x00000000FFFFFFFF
	return uint32(x)
}

// geoEncode is geohashEncode: false outside the WGS84 limits Redis indexes.
func geoEncode(lonR, latR geoRange, lon, lat float64, step uint) (geoHash, bool) {
	if lon > geoLongMax || lon < geoLongMin || lat > geoLatMax || lat < geoLatMin ||
		lat < latR.min || lat > latR.max || lon < lonR.min || lon > lonR.max {
		return geoHash{step: step}, false
	}
	latOff := (lat - latR.min) / (latR.max - latR.min)
	lonOff := (lon - lonR.min) / (lonR.max - lonR.min)
	latOff *= float64(uint64(1) << step)
	lonOff *= float64(uint64(1) << step)
	return geoHash{bits: spread(uint32(latOff)) | spread(uint32(lonOff))<<1, step: step}, true
}

// geoDecode is geohashDecode: the cell of h.
func geoDecode(lonR, latR geoRange, h geoHash) geoArea {
	ilat, ilon := squash(h.bits), squash(h.bits>>1)
	cells := float64(uint64(1) << h.step)
	latScale, lonScale := latR.max-latR.min, lonR.max-lonR.min
	return geoArea{
		lat: geoRange{latR.min + (float64(ilat)*1.0/cells)*latScale, latR.min + (float64(ilat+1)*1.0/cells)*latScale}, // uint32 wraps, as in C
		lon: geoRange{lonR.min + (float64(ilon)*1.0/cells)*lonScale, lonR.min + (float64(ilon+1)*1.0/cells)*lonScale},
	}
}

// center is geohashDecodeAreaToLongLat: the middle of the cell, within the limits.
func (a geoArea) center() (lon, lat float64) {
	lon = min(max((a.lon.min+a.lon.max)/2, geoLongMin), geoLongMax)
	lat = min(max((a.lat.min+a.lat.max)/2, geoLatMin), geoLatMax)
	return lon, lat
}

// cToUint64 converts a score to a hash as Redis's (uint64_t) cast does on x86-64 (gcc):
// a score that is not a geohash still decodes, to some position, the same one.
func cToUint64(d float64) uint64 {
	const two63 = 9223372036854775808.0
	if d >= two63 {
		d -= two63
		if d >= two63 {
			return 0 // cvttsd2si's "integer indefinite", with the top bit flipped back
		}
		return uint64(int64(d)) ^ 1<<63
	}
	if d != d || d < -two63 {
		return 1 << 63
	}
	return uint64(int64(d))
}

// scorePosition is decodeGeohash: the position a member's score stands for.
func scorePosition(score float64) (lon, lat float64) {
	return geoDecode(geoLongRange, geoLatRange, geoHash{bits: cToUint64(score), step: geoStepMax}).center()
}

// positionScore is the score GEOADD gives a position inside the limits.
func positionScore(lon, lat float64) float64 {
	h, _ := geoEncode(geoLongRange, geoLatRange, lon, lat, geoStepMax)
	return float64(h.bits << (52 - 2*h.step))
}

func degRad(d float64) float64 { return d * degToRad }

func radDeg(r float64) float64 { return r / degToRad }

func geoLatDistance(lat1, lat2 float64) float64 {
	return earthRadiusM * math.Abs(degRad(lat2)-degRad(lat1))
}

// geoDistance is the haversine distance in meters, computed as Redis 7.0 computes it.
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := u*u + math.Cos(lat1r)*math.Cos(lat2r)*v*v
	return 2.0 * earthRadiusM * math.Asin(math.Sqrt(a))
}

// geoDistanceCR is geoDistance with correctly rounded sin, cos and asin (trig.go), which
// agree with glibc's in the last bit for all but about one argument in a thousand, where
// Go's differ for one in five. It is 20 times slower: searches filter and sort with
// geoDistance, and only a distance a client gets whole, as a stored score (STOREDIST),
// is computed again with this.
func geoDistanceCR(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := crSin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := crSin((lat2r - lat1r) / 2)
	a := u*u + crCos(lat1r)*crCos(lat2r)*v*v
	return 2.0 * earthRadiusM * crAsin(math.Sqrt(a))
}

// cFloat prints v as C's "%f" does ("inf" as FormatDouble does).
func cFloat(v float64) string {
	if math.IsInf(v, 0) {
		return FormatDouble(v)
	}
	return strconv.FormatFloat(v, 'f', 6, 64)
}

// geoCoords parses a longitude and a latitude, replying with Redis's error if either is
// not a float or the pair is outside the limits.
func (c *Ctx) geoCoords(lonArg, latArg []byte) (lon, lat float64, ok bool) {
	if lon, ok = c.parseFloatArg(lonArg); !ok {
		return
	}
	if lat, ok = c.parseFloatArg(latArg); !ok {
		return
	}
	if lon < geoLongMin || lon > geoLongMax || lat < geoLatMin || lat > geoLatMax {
		c.Error("ERR invalid longitude,latitude pair " + cFloat(lon) + "," + cFloat(lat))
		return 0, 0, false
	}
	return lon, lat, true
}

// geoUnit parses a unit into meters per unit.
func (c *Ctx) geoUnit(b []byte) (float64, bool) {
	switch {
	case eq(b, "m"):
		return 1, true
	case eq(b, "km"):
		return 1000, true
	case eq(b, "ft"):
		return 0.3048, true
	case eq(b, "mi"):
		return 1609.34, true
	}
	c.Error("ERR unsupported unit provided. please use M, KM, FT, MI")
	return 0, false
}

// replyCoord replies a coordinate as Redis's addReplyHumanLongDouble does.
func (c *Ctx) replyCoord(v float64) { humanDouble(c.W, v) }

// replyDistance replies a distance as "%.4f", a bulk string in both protocols.
func (c *Ctx) replyDistance(d float64) {
	c.W.BulkString(strconv.FormatFloat(d, 'f', 4, 64))
}

func geoaddCmd(c *Ctx, args [][]byte) {
	flags := 0
	i := 2
	for ; i < len(args); i++ {
		switch {
		case eq(args[i], "nx"):
			flags |= zaddNX
		case eq(args[i], "xx"):
			flags |= zaddXX
		case eq(args[i], "ch"):
			flags |= zaddCH
		default:
			goto parsed
		}
	}
parsed:
	if (len(args)-i)%3 != 0 || flags&zaddNX != 0 && flags&zaddXX != 0 {
		c.Error(ErrSyntax)
		return
	}
	// GEOADD is ZADD with a geohash for a score: Redis builds that ZADD and runs it.
	zargs := make([][]byte, 0, i+2*(len(args)-i)/3)
	zargs = append(zargs, []byte("zadd"))
	zargs = append(zargs, args[1:i]...)
	for ; i < len(args); i += 3 {
		lon, lat, ok := c.geoCoords(args[i], args[i+1])
		if !ok {
			return
		}
		score := strconv.AppendUint(nil, uint64(positionScore(lon, lat)), 10)
		zargs = append(zargs, score, args[i+2])
	}
	zaddGeneric(c, zargs, 0)
}

func geoposCmd(c *Ctx, args [][]byte) {
	c.eachMemberScore(args, func(score float64, ok bool) {
		if !ok {
			c.W.NullArray()
			return
		}
		lon, lat := scorePosition(score)
		c.W.Array(2)
		c.replyCoord(lon)
		c.replyCoord(lat)
	})
}

// eachMemberScore replies an array with an element per member named after the key
// (args[2:]), which fn writes from the member's score (ok false for a missing member or
// key). A key of another type gets WRONGTYPE instead.
func (c *Ctx) eachMemberScore(args [][]byte, fn func(score float64, ok bool)) {
	_, z, wrong := c.zsetAt(args[1])
	if wrong {
		return
	}
	c.W.Array(len(args) - 2)
	for _, m := range args[2:] {
		var score float64
		ok := false
		if z != nil {
			score, ok = z.score(m)
		}
		fn(score, ok)
	}
}

func geodistCmd(c *Ctx, args [][]byte) {
	perUnit := 1.0
	switch {
	case len(args) == 5:
		var ok bool
		if perUnit, ok = c.geoUnit(args[4]); !ok {
			return
		}
	case len(args) > 5:
		c.Error(ErrSyntax)
		return
	}
	_, z, wrong := c.zsetAt(args[1])
	if wrong {
		return
	}
	if z == nil {
		c.W.Null()
		return
	}
	s1, ok1 := z.score(args[2])
	s2, ok2 := z.score(args[3])
	if !ok1 || !ok2 {
		c.W.Null()
		return
	}
	lon1, lat1 := scorePosition(s1)
	lon2, lat2 := scorePosition(s2)
	c.replyDistance(geoDistance(lon1, lat1, lon2, lat2) / perUnit)
}

const geoAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

func geohashCmd(c *Ctx, args [][]byte) {
	c.eachMemberScore(args, func(score float64, ok bool) {
		if !ok {
			c.W.Null()
			return
		}
		// The index spans latitudes ±85.05; a standard geohash spans ±90: decode, then
		// encode again over the standard ranges.
		lon, lat := scorePosition(score)
		h, _ := geoEncode(geoRange{-180, 180}, geoRange{-90, 90}, lon, lat, geoStepMax)
		var b [11]byte
		for i := range 10 {
			b[i] = geoAlphabet[(h.bits>>(52-(i+1)*5))&0x1f]
		}
		b[10] = geoAlphabet[0] // 52 bits make 10.4 characters; the 11th is taken as 0
		c.W.BulkString(string(b[:]))
	})
}

// --- searches: GEORADIUS, GEORADIUSBYMEMBER (and _RO), GEOSEARCH, GEOSEARCHSTORE -----------

const (
	geoByCoords = 1 << iota
	geoByMember
	geoNoStore
	geoSearch
	geoSearchStore
)

// geoShape is the area searched: a circle (radius) or a box (width × height), in units
// of perUnit meters, around (lon, lat).
type geoShape struct {
	lon, lat              float64
	box                   bool
	radius, width, height float64
	perUnit               float64
	bounds                [4]float64 // min lon, min lat, max lon, max lat
}

type geoPoint struct {
	lon, lat, dist, score float64
	member                string
}

// memberPosition is longLatFromMember.
func memberPosition(z *zset, m []byte) (lon, lat float64, ok bool) {
	score, ok := z.score(m)
	if !ok {
		return 0, 0, false
	}
	lon, lat = scorePosition(score)
	return lon, lat, true
}

// geoDistanceArgs parses a radius and its unit (extractDistanceOrReply).
func (c *Ctx) geoDistanceArgs(args [][]byte) (radius, perUnit float64, ok bool) {
	radius, ok = ParseFloat(args[0])
	if !ok {
		c.Error("ERR need numeric radius")
		return
	}
	if radius < 0 {
		c.Error("ERR radius cannot be negative")
		return 0, 0, false
	}
	perUnit, ok = c.geoUnit(args[1])
	return radius, perUnit, ok
}

// geoBoxArgs parses a width, a height and their unit (extractBoxOrReply).
func (c *Ctx) geoBoxArgs(args [][]byte) (width, height, perUnit float64, ok bool) {
	if width, ok = ParseFloat(args[0]); !ok {
		c.Error("ERR need numeric width")
		return
	}
	if height, ok = ParseFloat(args[1]); !ok {
		c.Error("ERR need numeric height")
		return
	}
	if height < 0 || width < 0 {
		c.Error("ERR height or width cannot be negative")
		return 0, 0, 0, false
	}
	perUnit, ok = c.geoUnit(args[2])
	return width, height, perUnit, ok
}

func geoSearchCmd(src, flags int) func(c *Ctx, args [][]byte) {
	return func(c *Ctx, args [][]byte) { c.geoSearch(args, src, flags) }
}

// geoSearch is Redis's georadiusGeneric: the same arguments checked in the same order.
func (c *Ctx) geoSearch(args [][]byte, src, flags int) {
	_, z, wrong := c.zsetAt(args[src])
	if wrong {
		return
	}
	var shape geoShape
	var base int
	var ok bool
	switch {
	case flags&geoByCoords != 0:
		base = 6
		if shape.lon, shape.lat, ok = c.geoCoords(args[2], args[3]); !ok {
			return
		}
		if shape.radius, shape.perUnit, ok = c.geoDistanceArgs(args[4:6]); !ok {
			return
		}
	case flags&geoByMember != 0:
		base = 5
		if z != nil {
			if shape.lon, shape.lat, ok = memberPosition(z, args[2]); !ok {
				c.Error("ERR could not decode requested zset member")
				return
			}
			if shape.radius, shape.perUnit, ok = c.geoDistanceArgs(args[3:5]); !ok {
				return
			}
		}
	default:
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
		}
	}

	var store []byte
	storeDist, withDist, withHash, withCoord, firstFound := false, false, false, false, false // firstFound: ANY
	fromMember, fromLonLat, byRadius, byBox := false, false, false, false
	sort := 0 // 1 ascending, -1 descending
	var count int64
	rest := args[base:]
	search := flags&geoSearch != 0
	for i := 0; i < len(rest); i++ {
		a, left := rest[i], len(rest)-i-1
		switch {
		case eq(a, "withdist"):
			withDist = true
		case eq(a, "withhash"):
			withHash = true
		case eq(a, "withcoord"):
			withCoord = true
		case eq(a, "any"):
			firstFound = true
		case eq(a, "asc"):
			sort = 1
		case eq(a, "desc"):
			sort = -1
		case eq(a, "count") && left >= 1:
			if count, ok = c.parseIntArg(rest[i+1]); !ok {
				return
			}
			if count <= 0 {
				c.Error("ERR COUNT must be > 0")
				return
			}
			i++
		case (eq(a, "store") || eq(a, "storedist")) && left >= 1 && flags&geoNoStore == 0 && !search:
			store, storeDist = rest[i+1], eq(a, "storedist")
			i++
		case eq(a, "storedist") && search && flags&geoSearchStore != 0:
			storeDist = true
		case eq(a, "frommember") && left >= 1 && search && !fromLonLat:
			if z != nil {
				if shape.lon, shape.lat, ok = memberPosition(z, rest[i+1]); !ok {
					c.Error("ERR could not decode requested zset member")
					return
				}
			}
			fromMember = true
			i++
		case eq(a, "fromlonlat") && left >= 2 && search && !fromMember:
			if shape.lon, shape.lat, ok = c.geoCoords(rest[i+1], rest[i+2]); !ok {
				return
			}
			fromLonLat = true
			i += 2
		case eq(a, "byradius") && left >= 2 && search && !byBox:
			if shape.radius, shape.perUnit, ok = c.geoDistanceArgs(rest[i+1 : i+3]); !ok {
				return
			}
			shape.box, byRadius = false, true
			i += 2
		case eq(a, "bybox") && left >= 3 && search && !byRadius:
			if shape.width, shape.height, shape.perUnit, ok = c.geoBoxArgs(rest[i+1 : i+4]); !ok {
				return
			}
			shape.box, byBox = true, true
			i += 3
		default:
			c.Error(ErrSyntax)
			return
		}
	}
	if flags&geoSearchStore != 0 {
		store = args[1]
	}
	switch {
	case store != nil && (withDist || withHash || withCoord):
		what := "STORE option in GEORADIUS"
		if flags&geoSearchStore != 0 {
			what = "GEOSEARCHSTORE"
		}
		c.Error("ERR " + what + " is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		return
	case flags&geoSearch != 0 && !fromMember && !fromLonLat:
		c.Error("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + string(args[0]))
		return
	case flags&geoSearch != 0 && !byRadius && !byBox:
		c.Error("ERR exactly one of BYRADIUS and BYBOX can be specified for " + string(args[0]))
		return
	case firstFound && count == 0:
		c.Error("ERR the ANY argument requires COUNT argument")
		return
	}
	if z == nil {
		if store != nil {
			c.del(store)
			c.W.Int(0)
		} else {
			c.W.Array(0)
		}
		return
	}
	if count != 0 && sort == 0 && !firstFound {
		sort = 1 // the closest COUNT: sorted whether asked or not
	}
	limit := 0
	if firstFound {
		limit = int(min(count, math.MaxInt32))
	}
	points := membersOfAllNeighbors(z, &shape, limit)
	if len(points) == 0 && store == nil {
		c.W.Array(0)
		return
	}
	n := len(points)
	if count != 0 && int64(n) > count {
		n = int(count)
	}
	if sort != 0 {
		byDist := func(a, b *geoPoint) int {
			switch {
			case a.dist > b.dist:
				return sort
			case a.dist < b.dist:
				return -sort
			}
			return 0
		}
		// As Redis: all of them with glibc's qsort (2.36's is a merge sort: stable), the
		// first COUNT of more with pqsort, whose order among equal distances is its own.
		if n == len(points) {
			slices.SortStableFunc(points, func(a, b geoPoint) int { return byDist(&a, &b) })
		} else {
			pqsort(points, byDist, 0, n-1)
		}
	}
	points = points[:n]
	if store != nil {
		// Cells that coincide but are not adjacent in the search order can report a
		// member twice (Redis then fails an assertion); the set keeps it once.
		es := make([]zentry, 0, len(points))
		seen := make(map[string]bool, len(points))
		for _, p := range points {
			if seen[p.member] {
				continue
			}
			seen[p.member] = true
			score := p.score
			if storeDist {
				score = geoDistanceCR(shape.lon, shape.lat, p.lon, p.lat) / shape.perUnit
			}
			es = append(es, zentry{member: p.member, score: zstoredScore(score)})
		}
		slices.SortFunc(es, zentryCompare)
		event := "georadiusstore"
		if flags&geoSearch != 0 {
			event = "geosearchstore"
		}
		c.zstoreResult(store, es, event)
		return
	}
	opts := 0
	for _, w := range []bool{withDist, withHash, withCoord} {
		if w {
			opts++
		}
	}
	c.W.Array(len(points))
	for _, p := range points {
		if opts > 0 {
			c.W.Array(opts + 1)
		}
		c.W.BulkString(p.member)
		if withDist {
			c.replyDistance(p.dist / shape.perUnit)
		}
		if withHash {
			c.W.Int(int64(p.score))
		}
		if withCoord {
			c.W.Array(2)
			c.replyCoord(p.lon)
			c.replyCoord(p.lat)
		}
	}
}

// estimateSteps is geohashEstimateStepsByRadius: the precision at which nine cells
// cover a search of that radius.
func estimateSteps(rangeM, lat float64) uint {
	if rangeM == 0 {
		return 26
	}
	step := 1
	for rangeM < mercatorMax {
		rangeM *= 2
		step++
	}
	step -= 2 // make sure the range is included in most of the base cases
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint(min(max(step, 1), 26))
}

// boundingBox is geohashBoundingBox.
func (s *geoShape) boundingBox() {
	height, width := s.radius, s.radius
	if s.box {
		height, width = s.height/2, s.width/2
	}
	height *= s.perUnit
	width *= s.perUnit
	latDelta := radDeg(height / earthRadiusM)
	lonDeltaTop := radDeg(width / earthRadiusM / math.Cos(degRad(s.lat+latDelta)))
	lonDeltaBottom := radDeg(width / earthRadiusM / math.Cos(degRad(s.lat-latDelta)))
	if s.lat < 0 { // the southern hemisphere: the box is wider at its top
		s.bounds[0], s.bounds[2] = s.lon-lonDeltaBottom, s.lon+lonDeltaBottom
	} else {
		s.bounds[0], s.bounds[2] = s.lon-lonDeltaTop, s.lon+lonDeltaTop
	}
	s.bounds[1], s.bounds[3] = s.lat-latDelta, s.lat+latDelta
}

// The bits of a hash that hold each coordinate.
const (
	lonBits = 0xaaaaaaaaaaaaaaaa
	latBits = 0x5555555555555555
)

// move is geohash_move_x (mask lonBits) and geohash_move_y (latBits): the neighbouring
// cell east or north (d > 0), west or south (d < 0), wrapping around. The other
// coordinate's bits are set for the step so that the carry crosses them.
func (h *geoHash) move(mask uint64, d int) {
	shift := 64 - h.step*2
	c, gaps := h.bits&mask, ^mask>>shift
	if d > 0 {
		c += gaps + 1
	} else {
		c = (c | gaps) - (gaps + 1)
	}
	h.bits = c&(mask>>shift) | h.bits&^mask
}

func (h geoHash) moved(dx, dy int) geoHash {
	if dx != 0 {
		h.move(lonBits, dx)
	}
	if dy != 0 {
		h.move(latBits, dy)
	}
	return h
}

// The nine cells of a search, in the order Redis visits them.
const (
	cellCenter = iota
	cellN
	cellS
	cellE
	cellW
	cellNE
	cellNW
	cellSE
	cellSW
)

// searchCells is geohashCalculateAreasByShapeWGS84: the cell of the center and its eight
// neighbours, in Redis's order (center, N, S, E, W, NE, NW, SE, SW), with the ones that
// cannot hold a match zeroed (ok false).
func searchCells(s *geoShape) (cells [9]geoHash, ok [9]bool) {
	s.boundingBox()
	minLon, minLat, maxLon, maxLat := s.bounds[0], s.bounds[1], s.bounds[2], s.bounds[3]
	radius := s.radius
	if s.box {
		radius = math.Sqrt((s.width/2)*(s.width/2) + (s.height/2)*(s.height/2))
	}
	radius *= s.perUnit
	steps := estimateSteps(radius, s.lat)
	neighbours := func(steps uint) (cells [9]geoHash, area geoArea) {
		h, _ := geoEncode(geoLongRange, geoLatRange, s.lon, s.lat, steps)
		cells = [9]geoHash{cellCenter: h, cellN: h.moved(0, 1), cellS: h.moved(0, -1), cellE: h.moved(1, 0),
			cellW: h.moved(-1, 0), cellNE: h.moved(1, 1), cellNW: h.moved(-1, 1), cellSE: h.moved(1, -1),
			cellSW: h.moved(-1, -1)}
		return cells, geoDecode(geoLongRange, geoLatRange, h)
	}
	cells, area := neighbours(steps)
	// A search near the edge of the center cell may reach past the neighbours: then one
	// step coarser.
	north := geoDecode(geoLongRange, geoLatRange, cells[cellN])
	south := geoDecode(geoLongRange, geoLatRange, cells[cellS])
	east := geoDecode(geoLongRange, geoLatRange, cells[cellE])
	west := geoDecode(geoLongRange, geoLatRange, cells[cellW])
	if steps > 1 && (north.lat.max < maxLat || south.lat.min > minLat || east.lon.max < maxLon || west.lon.min > minLon) {
		steps--
		cells, area = neighbours(steps)
	}
	ok = [9]bool{true, true, true, true, true, true, true, true, true}
	if steps >= 2 { // drop the neighbours on a side the search does not reach
		if area.lat.min < minLat {
			ok[cellS], ok[cellSW], ok[cellSE] = false, false, false
		}
		if area.lat.max > maxLat {
			ok[cellN], ok[cellNE], ok[cellNW] = false, false, false
		}
		if area.lon.min < minLon {
			ok[cellW], ok[cellSW], ok[cellNW] = false, false, false
		}
		if area.lon.max > maxLon {
			ok[cellE], ok[cellSE], ok[cellNE] = false, false, false
		}
	}
	return cells, ok
}

// membersOfAllNeighbors collects the members in the shape from the nine cells, in
// Redis's order, stopping at limit (ANY) when it is not 0.
func membersOfAllNeighbors(z *zset, s *geoShape, limit int) []geoPoint {
	cells, ok := searchCells(s)
	var points []geoPoint
	last := 0
	for i, h := range cells {
		if !ok[i] {
			continue
		}
		// A huge radius makes neighbours coincide: a cell just searched is skipped.
		if last != 0 && h == cells[last] {
			continue
		}
		if len(points) > 0 && limit > 0 && len(points) >= limit {
			break
		}
		points = pointsInCell(z, h, s, points, limit)
		last = i
	}
	return points
}

// pointsInCell appends the members whose scores fall in the cell h and whose positions
// are inside the shape.
func pointsInCell(z *zset, h geoHash, s *geoShape, points []geoPoint, limit int) []geoPoint {
	lo := float64(h.bits << (52 - 2*h.step))
	hi := float64((h.bits + 1) << (52 - 2*h.step))
	r := &zscoreRange{min: lo, max: hi, maxex: true}
	first := z.firstIn(r)
	if first < 0 {
		return points
	}
	z.tree.Ascend(z.at(first), func(e zentry) bool {
		if !r.lteMax(e) {
			return false
		}
		lon, lat := scorePosition(e.score)
		var dist float64
		if s.box {
			w, hgt := s.width*s.perUnit, s.height*s.perUnit
			if geoLatDistance(lat, s.lat) > hgt/2 || geoDistance(lon, lat, s.lon, lat) > w/2 {
				return true
			}
			dist = geoDistance(s.lon, s.lat, lon, lat)
		} else if dist = geoDistance(s.lon, s.lat, lon, lat); dist > s.radius*s.perUnit {
			return true
		}
		points = append(points, geoPoint{lon: lon, lat: lat, dist: dist, score: e.score, member: e.member})
		return limit == 0 || len(points) < limit
	})
	return points
}
