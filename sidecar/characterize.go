package sidecar

import (
	"net/http"
	"path/filepath"

	"github.com/wayside-archive/wayside/api"
	"github.com/wayside-archive/wayside/characterize"
	"github.com/wayside-archive/wayside/consumers"
	"github.com/wayside-archive/wayside/warcio"
)

// CharacterizeConfig configures format characterization of ingested
// captures (package characterize).
type CharacterizeConfig struct {
	// Enabled turns characterization on.
	Enabled bool `yaml:"enabled"`
	// Store is the results directory. Default DataDir/characterization.
	Store string `yaml:"store"`
	// Workers identify payloads in parallel. Default: the number of CPUs.
	Workers int `yaml:"workers"`
	// MaxDepth, MaxObjectBytes and MaxRatio override the unpacking limits
	// (characterize.DefaultLimits).
	MaxDepth       int     `yaml:"max_depth"`
	MaxObjectBytes int64   `yaml:"max_object_bytes"`
	MaxRatio       float64 `yaml:"max_ratio"`
}

func (c *CharacterizeConfig) defaults(dataDir string) {
	if c.Store == "" {
		c.Store = filepath.Join(dataDir, "characterization")
	}
}

func (c *CharacterizeConfig) validate() error {
	switch {
	case c.Workers < 0:
		return keyErr("characterize.workers", "must not be negative, got %d", c.Workers)
	case c.MaxDepth < 0:
		return keyErr("characterize.max_depth", "must not be negative, got %d", c.MaxDepth)
	case c.MaxObjectBytes < 0:
		return keyErr("characterize.max_object_bytes", "must not be negative, got %d", c.MaxObjectBytes)
	case c.MaxRatio < 0 || (c.MaxRatio > 0 && c.MaxRatio < 1):
		return keyErr("characterize.max_ratio", "must be at least 1, got %v", c.MaxRatio)
	}
	return nil
}

// consumer is the characterization consumer's configuration (a zero
// Store when disabled).
func (c *CharacterizeConfig) consumer(warcDirs []string) consumers.CharacterizeConfig {
	if !c.Enabled {
		return consumers.CharacterizeConfig{}
	}
	return consumers.CharacterizeConfig{Store: c.Store, WARCDirs: warcDirs, Workers: c.Workers,
		Limits: characterize.Limits{MaxDepth: c.MaxDepth, MaxObject: c.MaxObjectBytes, MaxRatio: c.MaxRatio}}
}

func (s *Server) addCharacterizeRoutes() {
	s.add(&route{name: "characterize_formats", method: "GET", path: api.PathCharFormats, h: s.charHandler(func(r *http.Request) any {
		return nonNilSlice(s.cons.CharStore.Formats(r.URL.Query()["puid"]...))
	})})
	s.add(&route{name: "characterize_risk", method: "GET", path: api.PathCharRisk, h: s.charHandler(func(r *http.Request) any {
		return nonNilSlice(s.cons.CharStore.Risk(r.URL.Query()["puid"]...))
	})})
	s.add(&route{name: "characterize_files", method: "GET", path: api.PathCharFiles, h: s.charHandler(func(*http.Request) any {
		return nonNilSlice(s.cons.CharStore.Files())
	})})
	s.add(&route{name: "characterize_status", method: "GET", path: api.PathCharStatus, h: s.charHandler(func(*http.Request) any {
		return s.cons.Characterizer.Stats()
	})})
	s.add(&route{name: "characterize_container", method: "GET", path: api.PathCharContainer, h: s.charHandler(func(r *http.Request) any {
		q := r.URL.Query()
		// Not characterized: an empty report (its summary names no file).
		rep, _ := s.cons.CharStore.Report(q.Get("file"), q.Get("records") != "", q["puid"]...)
		return rep
	})})
}

// charHandler answers a characterization query with answer's JSON.
func (s *Server) charHandler(answer func(*http.Request) any) func(http.ResponseWriter, *http.Request, *reqInfo) error {
	return func(w http.ResponseWriter, r *http.Request, _ *reqInfo) error {
		if s.cons.CharStore == nil {
			return errorf(http.StatusNotFound, "characterization is not enabled (characterize.enabled)")
		}
		q := r.URL.Query()
		if (r.URL.Path == api.PathCharFormats || r.URL.Path == api.PathCharRisk) && len(q["puid"]) == 0 {
			return errorf(http.StatusBadRequest, "missing puid parameter")
		}
		if r.URL.Path == api.PathCharContainer {
			if err := warcio.CheckFileName(q.Get("file")); err != nil {
				return errorf(http.StatusBadRequest, "file: %v", err)
			}
		}
		writeJSON(w, http.StatusOK, answer(r))
		return nil
	}
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
