package record

// Fields of a record as FieldSizes names them.
const (
	FieldHeader        = "header (flags)"
	FieldDate          = "date"
	FieldRecordID      = "record id"
	FieldFile          = "file"
	FieldOffset        = "offset"
	FieldLength        = "length"
	FieldPayloadLength = "payload length"
	FieldStatus        = "status"
	FieldMIME          = "MIME"
	FieldETag          = "ETag"
	FieldLastModified  = "Last-Modified"
	FieldOrigin        = "origin id"
	FieldURI           = "target URI"
)

// FieldSize is the number of bytes one field takes in an encoded record.
type FieldSize struct {
	Field string
	Bytes int
}

// FieldSizes returns the bytes each field of r takes in its encoding
// (packed or not), in encoding order; they add up to the encoded length.
// Benchmarks report them.
func FieldSizes(r *Record, packed bool) []FieldSize {
	var m marks
	if packed {
		appendPacked(nil, r, &m)
	} else {
		appendRecord(nil, r, &m)
	}
	var out []FieldSize
	for i := 0; i+1 < len(m); i++ {
		out = append(out, FieldSize{m[i].field, m[i+1].pos - m[i].pos})
	}
	return out
}

// marks records where each field starts while a record is encoded; a nil
// *marks records nothing.
type marks []struct {
	field string
	pos   int
}

func (m *marks) at(field string, b []byte) {
	if m != nil {
		*m = append(*m, struct {
			field string
			pos   int
		}{field, len(b)})
	}
}
