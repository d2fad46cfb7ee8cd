package sim

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// cursor is what a page token carries: the window it was issued for (so a
// token cannot be replayed against another window or shop) and the last
// (updated_at, id) returned. The next page continues strictly after that
// position, so paging stays stable while orders change: an order that moves
// behind the cursor is picked up by the next (overlapping) window instead.
type cursor struct {
	shop     uint64 // hash of the shop name
	from, to int64  // the window in ns, exactly as requested
	after    entry  // last position returned; (from µs, 0) before the first page
}

const tokenVersion = 1

// tokenLen is version, shop, from, to, updated_at, seq and a checksum.
const tokenLen = 1 + 8 + 8 + 8 + 8 + 4 + 4

var (
	errTokenGarbled = errors.New("page_token is not a token issued by this API")
	errTokenWindow  = errors.New("page_token belongs to a different window; repeat updated_from and updated_to of the first page")
	errTokenShop    = errors.New("page_token belongs to a different shop")
)

func (c cursor) encode() string {
	b := make([]byte, 0, tokenLen)
	b = append(b, tokenVersion)
	b = binary.BigEndian.AppendUint64(b, c.shop)
	b = binary.BigEndian.AppendUint64(b, uint64(c.from))
	b = binary.BigEndian.AppendUint64(b, uint64(c.to))
	b = binary.BigEndian.AppendUint64(b, uint64(c.after.upd))
	b = binary.BigEndian.AppendUint32(b, c.after.seq)
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor parses a token and checks it was issued for this shop and window.
func decodeCursor(tok string, shop uint64, from, to int64) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) != tokenLen || b[0] != tokenVersion {
		return cursor{}, errTokenGarbled
	}
	body, sum := b[:tokenLen-4], binary.BigEndian.Uint32(b[tokenLen-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return cursor{}, errTokenGarbled
	}
	c := cursor{
		shop: binary.BigEndian.Uint64(b[1:]),
		from: int64(binary.BigEndian.Uint64(b[9:])),
		to:   int64(binary.BigEndian.Uint64(b[17:])),
		after: entry{
			upd: int64(binary.BigEndian.Uint64(b[25:])),
			seq: binary.BigEndian.Uint32(b[33:]),
		},
	}
	switch {
	case c.shop != shop:
		return cursor{}, errTokenShop
	case c.from != from || c.to != to:
		return cursor{}, errTokenWindow
	}
	return c, nil
}
