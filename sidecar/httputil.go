package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// apiError is an error with an HTTP status; handlers return it and the
// router writes {"error": "..."}.
type apiError struct {
	code int
	msg  string
}

func (e *apiError) Error() string { return e.msg }

func errorf(code int, format string, a ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, a...)}
}

// ErrorBody is the JSON body of every 4xx/5xx answer.
type ErrorBody struct {
	Error string `json:"error"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// writeJSON sends v with a Content-Length (no chunked framing).
func writeJSON(w http.ResponseWriter, code int, v any) {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	writeJSONBytes(w, code, buf.Bytes())
}

// The values of the headers every JSON answer carries, shared by all
// answers: Header.Set and Add replace or grow a value slice, never write
// into it, and a slice of capacity 1 grows into a new array.
var (
	hdrJSON    = []string{"application/json"}
	hdrNosniff = []string{"nosniff"}
)

// lookupBufPool holds the buffers lookup answers are encoded into.
var lookupBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeJSONBytes sends an encoded JSON answer b with a Content-Length.
func writeJSONBytes(w http.ResponseWriter, code int, b []byte) {
	h := w.Header()
	h["Content-Type"] = hdrJSON
	h["X-Content-Type-Options"] = hdrNosniff
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(code)
	w.Write(b)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, ErrorBody{Error: msg})
}

// decodeJSON reads a JSON body of at most limit bytes into v, refusing
// unknown fields and trailing data.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return errorf(http.StatusUnsupportedMediaType, "content type %q: send application/json", ct)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, "request body exceeds %d bytes", limit)
		}
		if errors.Is(err, io.EOF) {
			return errorf(http.StatusBadRequest, "empty request body: expected a JSON object")
		}
		return errorf(http.StatusBadRequest, "bad JSON body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(http.StatusRequestEntityTooLarge, "request body exceeds %d bytes", limit)
		}
		return errorf(http.StatusBadRequest, "bad JSON body: trailing data after the object")
	}
	return nil
}

// statusWriter records the status code for metrics and logs.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// acceptsGzip reports whether an Accept-Encoding header value allows gzip
// (RFC 9110 §12.5.3: "gzip" or "x-gzip" or "*" with q > 0).
func acceptsGzip(h string) bool {
	star := false
	for _, part := range strings.Split(h, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		name = strings.ToLower(strings.TrimSpace(name))
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if ok && strings.EqualFold(strings.TrimSpace(k), "q") {
				var f float64
				if _, err := fmt.Sscanf(strings.TrimSpace(v), "%g", &f); err == nil {
					q = f
				}
			}
		}
		switch name {
		case "gzip", "x-gzip":
			return q > 0
		case "*":
			star = q > 0
		}
	}
	return star
}
