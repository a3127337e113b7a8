// Package cdpmsg decodes and re-encodes the envelope of a CDP message: id,
// method and sessionId. Params, results and errors stay raw bytes, so the
// relay never interprets what it only forwards.
package cdpmsg

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp/jsonv2"
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed CDP message")

// Envelope is the routing part of a CDP message. Raw fields alias a copy of
// the input made by the decoder and stay valid after the input is reused.
type Envelope struct {
	// RawID is the id as written; empty for events.
	RawID jsonv2.Value `json:"id,omitzero"`
	// SessionID is the flat-mode session the message belongs to.
	SessionID string `json:"sessionId,omitzero"`
	// Method is the command or event name.
	Method string `json:"method,omitzero"`
	// Params, Result and Error are kept as raw JSON.
	Params jsonv2.Value `json:"params,omitzero"`
	Result jsonv2.Value `json:"result,omitzero"`
	Error  jsonv2.Value `json:"error,omitzero"`

	// ID is RawID parsed; valid when HasID.
	ID    int64 `json:"-"`
	HasID bool  `json:"-"`
	// Attached and Detached are the decoded params of a
	// Target.attachedToTarget and a Target.detachedFromTarget event, set by
	// DecodeSessions.
	Attached *Attached `json:"-"`
	Detached *Detached `json:"-"`
}

// Decode parses msg. It rejects invalid JSON, duplicate keys, invalid UTF-8,
// and ids that are not non-negative integers.
func Decode(msg []byte) (*Envelope, error) {
	e := new(Envelope)
	if err := DecodeInto(msg, e); err != nil {
		return nil, err
	}
	return e, nil
}

// DecodeBrowser is Decode for a message from the browser, which may hold
// a lone UTF-16 surrogate escaped (Chrome writes a page's string cut inside
// an emoji, "x\ud800y", so): strict JSON refuses it, and a reply or event
// dropped for it left an agent's command unanswered for good. Such a
// string reads as U+FFFD here; the message is forwarded as it came.
func DecodeBrowser(msg []byte) (*Envelope, error) {
	e := new(Envelope)
	if err := decodeInto(msg, e, browserJSON); err != nil {
		return nil, err
	}
	return e, nil
}

// UnmarshalBrowser decodes JSON the browser wrote (an event's params, a
// reply's result) into v with lone UTF-16 surrogates allowed, as
// DecodeBrowser reads the message around it: Chrome writes a page's string
// cut inside an emoji so, and a strict decode skipped the whole event or
// reply, so one page's title could make a user's target list unreadable,
// or a tab's change unseen by the guard.
func UnmarshalBrowser(data []byte, v any) error {
	return jsonv2.Unmarshal(data, v, browserJSON)
}

// MarshalBrowser encodes v, which holds values the browser wrote (raw JSON
// kept from a reply or event), as UnmarshalBrowser reads them: a lone
// surrogate escape in a kept value is written back as it came.
func MarshalBrowser(v any) ([]byte, error) {
	return jsonv2.Marshal(v, browserJSON)
}

// browserJSON is how the browser's JSON is read: lone surrogates, as
// Chrome writes them, are not an error (DecodeBrowser).
var browserJSON = jsonv2.AllowInvalidUTF8(true)

// DecodeInto is Decode into a caller-owned Envelope, which is reset first.
func DecodeInto(msg []byte, e *Envelope) error {
	return decodeInto(msg, e)
}

func decodeInto(msg []byte, e *Envelope, opts ...jsonv2.Options) error {
	*e = Envelope{}
	if err := jsonv2.Unmarshal(msg, e, opts...); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(e.RawID) > 0 {
		id, err := strconv.ParseInt(string(e.RawID), 10, 64)
		if err != nil || id < 0 {
			return fmt.Errorf("%w: id %s is not a non-negative integer", ErrMalformed, truncate(e.RawID))
		}
		e.ID, e.HasID = id, true
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "…"
	}
	return string(b)
}

// IsEvent reports whether the message is an event (a method and no id).
func (e *Envelope) IsEvent() bool { return !e.HasID && e.Method != "" }

// AppendCommand appends a command message.
func AppendCommand(b []byte, id int64, sessionID, method string, params []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	if sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = AppendString(b, sessionID)
	}
	b = append(b, `,"method":`...)
	b = AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	return append(b, '}')
}

// AppendResponse appends a response with either result or errRaw set.
func AppendResponse(b []byte, id int64, sessionID string, result, errRaw []byte) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, id, 10)
	if len(errRaw) > 0 {
		b = append(b, `,"error":`...)
		b = append(b, errRaw...)
	} else {
		b = append(b, `,"result":`...)
		if len(result) == 0 {
			result = []byte("{}")
		}
		b = append(b, result...)
	}
	if sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = AppendString(b, sessionID)
	}
	return append(b, '}')
}

// AppendEvent appends an event message.
func AppendEvent(b []byte, sessionID, method string, params []byte) []byte {
	b = append(b, `{"method":`...)
	b = AppendString(b, method)
	if len(params) > 0 {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	if sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b = AppendString(b, sessionID)
	}
	return append(b, '}')
}

// Error codes used in CDP error responses, as Chrome uses them.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeServerError    = -32000
)

// AppendError appends an error response. A negative id writes no id (for
// messages whose id could not be read).
func AppendError(b []byte, id int64, sessionID string, code int, message string) []byte {
	eb := AppendErrorObject(make([]byte, 0, len(message)+32), code, message)
	if id < 0 {
		b = append(b, `{"error":`...)
		b = append(b, eb...)
		if sessionID != "" {
			b = append(b, `,"sessionId":`...)
			b = AppendString(b, sessionID)
		}
		return append(b, '}')
	}
	return AppendResponse(b, id, sessionID, nil, eb)
}

// AppendErrorObject appends a CDP error object, {"code":..,"message":..}:
// the error of a response, also for reply hooks that replace the browser's.
func AppendErrorObject(b []byte, code int, message string) []byte {
	b = append(b, `{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = AppendString(b, message)
	return append(b, '}')
}

// AppendString appends s as a JSON string. Invalid UTF-8 is replaced.
func AppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
