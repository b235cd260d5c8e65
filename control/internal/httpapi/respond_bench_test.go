package httpapi

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/switchboardgg/switchboard/api"
)

// benchRequest is the body of a C1.
const benchRequest = `{"client_session_id":"join-6f2a01b7-468e","transport":"ws"}`

// BenchmarkDecodeBody decodes a C1 body: read, decode, strict pass.
func BenchmarkDecodeBody(b *testing.B) {
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		r, _ := http.NewRequest("POST", "/", bytes.NewReader([]byte(benchRequest)))
		r.ContentLength = int64(len(benchRequest))
		var req api.JoinRequest
		if err := DecodeBody(w, r, 64<<10, &req); err != nil {
			b.Fatal(err)
		}
	}
}

// discardWriter is a ResponseWriter that keeps nothing.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkWriteJSON writes a C0 answer.
func BenchmarkWriteJSON(b *testing.B) {
	w := &discardWriter{h: http.Header{}}
	v := &api.SessionResponse{
		AccessToken:  "at1.eyJzZXNzaW9uX2lkIjoid0IwRXh3eVhyTmw3bzFzNGs4bDB0QSJ9.i39FleO1NbVuCV2MXQvgmhSPoFCMmYKH0jRS1i3xUvw",
		RefreshToken: "rf1_wB0ExwyXrNl7o1s4k8l0tA.i39FleO1NbVuCV2MXQvgmhSPoFCMmYKH0jRS1i3xUvw",
		ExpiresAt:    api.NewTime(time.Unix(1796136699, 0)),
		SessionID:    "wB0ExwyXrNl7o1s4k8l0tA",
		User:         api.User{Username: "alice"},
	}
	b.ReportAllocs()
	for b.Loop() {
		WriteJSON(w, http.StatusCreated, v)
	}
}
