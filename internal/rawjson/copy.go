package rawjson

// Copy hands out the strings and raw values of one JSON document as parts of a single
// copy of it, made when first needed: a decoder that keeps several of a message's
// fields makes one allocation for all of them (or two, when it keeps both strings and
// raw values), not one per field. The parts keep the whole copy alive.
type Copy struct {
	doc  []byte // the document the values are parts of
	text string // doc as a string, once a plain string was asked for
	raw  []byte // a copy of doc, once a raw value was asked for
}

// NewCopy returns a Copy of the values of doc, which must not change while the Copy
// is used (the copies are made when first needed).
func NewCopy(doc []byte) Copy { return Copy{doc: doc} }

// Unquote reads the JSON string value, a part of the document, as Unquote does.
func (c *Copy) Unquote(value []byte) (string, bool) {
	plain, _, ok := PlainString(value, 0)
	off, within := c.offset(plain)
	if !ok || !within {
		return Unquote(value)
	}
	if c.text == "" {
		c.text = string(c.doc)
	}
	return c.text[off : off+len(plain)], true
}

// String reads a string field's value into dst as encoding/json does: null leaves dst
// as it is; false (dst untouched) when value is not a string.
func (c *Copy) String(value []byte, dst *string) bool {
	if string(value) == "null" {
		return true
	}
	s, ok := c.Unquote(value)
	if ok {
		*dst = s
	}
	return ok
}

// Raw returns a copy of value, a part of the document.
func (c *Copy) Raw(value []byte) []byte {
	off, within := c.offset(value)
	if !within {
		return append([]byte(nil), value...)
	}
	if c.raw == nil {
		c.raw = append([]byte(nil), c.doc...)
	}
	return c.raw[off : off+len(value) : off+len(value)]
}

// offset is where part starts in the document, when it is a part of it (Fields
// hands out parts: slices of the object it walks).
func (c *Copy) offset(part []byte) (int, bool) {
	if len(part) == 0 {
		return 0, false
	}
	off := cap(c.doc) - cap(part)
	if off < 0 || off+len(part) > len(c.doc) || &c.doc[off] != &part[0] {
		return 0, false
	}
	return off, true
}
