package httpapi

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"
)

// checkStrict rejects what encoding/json accepts but other parsers refuse
// or read differently, in a body that decoded into v without error (so it
// is one valid JSON value):
//
//   - bytes that are not UTF-8 (RFC 8259 §8.1), and \u escapes of an
//     unpaired UTF-16 surrogate, which encoding/json turns into U+FFFD.
//     Metadata and close results are stored and served as sent, and such
//     text would make the room list unparseable for strict clients;
//   - a key twice in one object, at any depth: encoding/json keeps the
//     last, other parsers the first or neither (RFC 8259 §4);
//   - a field of v named in another case ("Room_ID"), which encoding/json
//     matches to room_id.
//
// It is one pass over the body that allocates only for escaped keys and
// objects of many keys: it runs on every request.
func checkStrict(body []byte, v any) error {
	if !utf8.Valid(body) {
		return Invalid("request body is not valid UTF-8")
	}
	t := reflect.TypeOf(v)
	if t != nil && (t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct) {
		t = nil
	}
	type frame struct {
		object    bool
		expectKey bool
		start     int // of its keys in keys
	}
	var (
		frameBuf [8]frame
		stack    = frameBuf[:0]
		keyBuf   [16][]byte
		keys     = keyBuf[:0] // the keys of the open objects, innermost last
	)
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true, start: len(keys)})
		case '[':
			stack = append(stack, frame{})
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.expectKey = true
			}
		case ']':
			stack = stack[:len(stack)-1]
		case '}':
			top := stack[len(stack)-1]
			if k := duplicate(keys[top.start:]); k != nil {
				return Invalid("key %s appears twice in one object", quoteName(string(k)))
			}
			keys = keys[:top.start]
			stack = stack[:len(stack)-1]
		case '"':
			end, escaped, lone := scanString(body, i)
			if lone {
				return Invalid("request body holds a \\u escape of an unpaired UTF-16 surrogate")
			}
			if n := len(stack); n > 0 && stack[n-1].expectKey {
				stack[n-1].expectKey = false
				key := body[i+1 : end]
				if escaped {
					var s string
					if err := json.Unmarshal(body[i:end+1], &s); err != nil {
						return Invalid("malformed JSON") // ruled out by the decode before
					}
					key = []byte(s)
				}
				keys = append(keys, key)
				if n == 1 && t != nil {
					if name, exact := fieldNamed(t.Elem(), key); !exact {
						return Invalid("unknown field %s (field names are case-sensitive: %s)", quoteName(string(key)), name)
					}
				}
			}
			i = end
		}
	}
	return nil
}

// scanString returns the index of the quote that ends the string literal
// starting at b[start], whether it holds escapes, and whether one of them
// is a \u escape of a UTF-16 surrogate that is not a high one followed by
// a low one. b is valid JSON.
func scanString(b []byte, start int) (end int, escaped, lone bool) {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '"':
			return i, escaped, lone
		case '\\':
			escaped = true
			i++
			if b[i] != 'u' {
				continue
			}
			r := hex4(b[i+1 : i+5])
			i += 4
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				lone = true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
					lone = true
					continue
				}
				if lo := hex4(b[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
					lone = true
					continue
				}
				i += 6
			}
		}
	}
	return len(b) - 1, escaped, lone
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

// duplicate returns a key that keys holds twice, or nil. Few keys are
// compared pairwise; many are sorted (in place: the caller drops them).
func duplicate(keys [][]byte) []byte {
	if len(keys) <= 16 {
		for i := range keys {
			for j := i + 1; j < len(keys); j++ {
				if bytes.Equal(keys[i], keys[j]) {
					return keys[i]
				}
			}
		}
		return nil
	}
	slices.SortFunc(keys, bytes.Compare)
	for i := 1; i < len(keys); i++ {
		if bytes.Equal(keys[i-1], keys[i]) {
			return keys[i]
		}
	}
	return nil
}

// fieldNamed returns the JSON name of the field of struct type st that
// key names: exactly, or else in another case (encoding/json matches
// both).
func fieldNamed(st reflect.Type, key []byte) (name string, exact bool) {
	for _, n := range jsonNames(st) {
		if string(key) == n {
			return n, true
		}
		if name == "" && strings.EqualFold(string(key), n) {
			name = n
		}
	}
	return name, false
}

// fieldNames caches jsonNames: reflect.Type → []string. Only the request
// types of the API are decoded, so it stays small.
var fieldNames sync.Map

// jsonNames returns the JSON names of the exported fields of struct type
// st, in field order.
func jsonNames(st reflect.Type) []string {
	if v, ok := fieldNames.Load(st); ok {
		return v.([]string)
	}
	var names []string
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch n {
		case "-":
			continue
		case "":
			n = f.Name
		}
		names = append(names, n)
	}
	fieldNames.Store(st, names)
	return names
}

// quoteName quotes a key for an error message, cut to 64 bytes.
func quoteName(k string) string {
	if len(k) > 64 {
		k = strings.ToValidUTF8(k[:64], "") + "…"
	}
	return `"` + k + `"`
}
