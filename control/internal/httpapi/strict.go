package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
)

// checkStrict rejects what encoding/json accepts but other parsers refuse
// or read differently, in a body that decoded into v without error:
//
//   - bytes that are not UTF-8 (RFC 8259 §8.1), and \u escapes of an
//     unpaired UTF-16 surrogate, which encoding/json turns into U+FFFD.
//     Metadata and close results are stored and served as sent, and such
//     text would make the room list unparseable for strict clients;
//   - a key twice in one object, at any depth: encoding/json keeps the
//     last, other parsers the first or neither (RFC 8259 §4);
//   - a field of v named in another case ("Room_ID"), which encoding/json
//     matches to room_id.
func checkStrict(body []byte, v any) error {
	if !utf8.Valid(body) {
		return Invalid("request body is not valid UTF-8")
	}
	if hasLoneSurrogate(body) {
		return Invalid("request body holds a \\u escape of an unpaired UTF-16 surrogate")
	}
	fields := jsonFields(reflect.TypeOf(v))
	type object struct {
		keys      map[string]struct{}
		expectKey bool
	}
	var stack []*object // nil entries are arrays
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return Invalid("malformed JSON") // ruled out by the decode before
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if key, ok := tok.(string); ok && top != nil && top.expectKey {
			if _, dup := top.keys[key]; dup {
				return Invalid("key %s appears twice in one object", quoteName(key))
			}
			top.keys[key] = struct{}{}
			top.expectKey = false
			if len(stack) == 1 && fields != nil {
				if _, ok := fields[key]; !ok {
					for f := range fields {
						if strings.EqualFold(f, key) {
							return Invalid("unknown field %s (field names are case-sensitive: %s)", quoteName(key), f)
						}
					}
				}
			}
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &object{keys: make(map[string]struct{}), expectKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, nil)
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				continue
			}
			top = stack[len(stack)-1]
		}
		if top != nil {
			top.expectKey = true // a value ended; a key or } comes next
		}
	}
}

// quoteName quotes a key for an error message, cut to 64 bytes.
func quoteName(k string) string {
	if len(k) > 64 {
		k = strings.ToValidUTF8(k[:64], "") + "…"
	}
	return `"` + k + `"`
}

// hasLoneSurrogate reports whether the string literals of the valid JSON
// text b hold a \u escape of a UTF-16 surrogate that is not a high one
// followed by a low one.
func hasLoneSurrogate(b []byte) bool {
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			i++
			if b[i] != 'u' {
				continue
			}
			r := hex4(b[i+1 : i+5])
			i += 4
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
					return true
				}
				if lo := hex4(b[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
		}
	}
	return false
}

// hex4 decodes 4 hex digits, which valid JSON guarantees.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// jsonFields returns the JSON names of the fields of the struct t points
// to, or nil when t is not a pointer to a struct.
func jsonFields(t reflect.Type) map[string]struct{} {
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	st := t.Elem()
	m := make(map[string]struct{}, st.NumField())
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		m[name] = struct{}{}
	}
	return m
}
