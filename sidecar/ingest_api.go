package sidecar

import (
	"net/http"

	"github.com/wayside-archive/wayside/api"
)

func (s *Server) addIngestRoutes() {
	s.add(&route{name: "ingest", method: "GET", path: api.PathIngest, h: s.handleIngestStatus})
}

func (s *Server) handleIngestStatus(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
	writeJSON(w, http.StatusOK, ingestWire(s.ing().Status()))
	return nil
}
