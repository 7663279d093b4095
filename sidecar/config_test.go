package sidecar

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigDefaultsAndEnv(t *testing.T) {
	env := map[string]string{"TOK": "0123456789abcdef-token", "DIRS": "/srv/warcs"}
	getenv := func(k string) string { return env[k] }
	c, err := ParseConfig([]byte(`
data_dir: /var/lib/wayside
listen:
  tcp: 127.0.0.1:8181
  token: ${TOK}
  cdx_token: ${CDX:-cdx-0123456789abcdef}
ingest:
  dirs: ["${DIRS}", /other]
  poll_interval: 500ms
mementomap:
  public_url: "http://x/$$u"
`), "test.yaml", getenv)
	if err != nil {
		t.Fatal(err)
	}
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Listen.Token != env["TOK"] || c.Listen.CDXToken != "cdx-0123456789abcdef" {
		t.Errorf("tokens: %q %q", c.Listen.Token, c.Listen.CDXToken)
	}
	if c.Ingest.Dirs[0] != "/srv/warcs" || c.Ingest.PollInterval != 500*time.Millisecond {
		t.Errorf("ingest: %+v", c.Ingest)
	}
	if c.Map.PublicURL != "http://x/$u" {
		t.Errorf("$$ not a literal $: %q", c.Map.PublicURL)
	}
	if c.Listen.Unix != "/var/lib/wayside/wayside.sock" || c.Index.Path != "/var/lib/wayside/index" || c.Index.URL != c.Index.Path ||
		c.Index.Scope != "default" || c.Index.Match != "digest" {
		t.Errorf("defaults: %+v %+v", c.Listen, c.Index)
	}
	if l := c.Limits; l.ReadHeaderTimeout != 10*time.Second || l.ReadTimeout != time.Minute || l.IdleTimeout != 2*time.Minute ||
		l.MaxConns != 256 || c.Ingest.MinFreeBytes != 64<<20 {
		t.Errorf("limit defaults: %+v, min_free_bytes %d", l, c.Ingest.MinFreeBytes)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		key  string
	}{
		{"listen:\n  tcp: 0.0.0.0:8181\n  token: 0123456789abcdef0\n", "listen.tcp"},
		{"listen:\n  tcp: 10.1.2.3:8181\n  token: 0123456789abcdef0\n", "listen.tcp"},
		{"listen:\n  tcp: 127.0.0.1:8181\n", "listen.token"},
		{"listen:\n  tcp: 127.0.0.1:8181\n  token: short\n", "listen.token"},
		{"listen:\n  tcp: 127.0.0.1:8181\n  token: 0123456789abcdef0\n  cdx_token: 0123456789abcdef0\n", "listen.cdx_token"},
		{"listen:\n  tcp: 127.0.0.1:8181\n  token: ${NOPE}\n", "listen.token"},
		{"ingest:\n  poll_interval: 1ms\n", "ingest.poll_interval"},
		{"index:\n  url: mongodb://x/\n", "index.url"},
		{"index:\n  match: sometimes\n", "index.match"},
		{"ingest:\n  cdxj_dir: \"-\"\n", "mementomap.path"},
		{"limits:\n  max_batch: -1\n", "limits.max_batch"},
		{"limits:\n  max_conns: -1\n", "limits.max_conns"},
		{"limits:\n  read_header_timeout: 1ms\n", "limits.read_header_timeout"},
		{"limits:\n  read_timeout: 5s\n  read_header_timeout: 10s\n", "limits.read_timeout"},
		{"limits:\n  idle_timeout: 1us\n", "limits.idle_timeout"},
		{"ingest:\n  min_free_bytes: -2\n", "ingest.min_free_bytes"},
		{"log:\n  level: loud\n", "log.level"},
		{"access:\n  max_results: -1\n", "access.max_results"},
		{"access:\n  timemap_page_size: -5\n", "access.timemap_page_size"},
		{"access:\n  public_url: archive.example.org\n", "access.public_url"},
		{"access:\n  storage:\n    v1: /srv/warcs\n", "access.storage"},
		{"access:\n  storage:\n    \"a/b\": /srv/warcs\n", "access.storage"},
		{"access:\n  storage:\n    coll: ftp://host/warcs\n", "access.storage.coll"},
		{"access:\n  storage:\n    coll: \"https://user:pw@host/warcs\"\n", "access.storage.coll"},
		{"listen:\n  content_front: nowhere\n", "listen.content_front"},
		{"access:\n  tokens:\n  - token: short\n    access_point: room\n", "access.tokens[0].token"},
		{"access:\n  tokens:\n  - token: 0123456789abcdef0123\n", "access.tokens[0].access_point"},
		{"listen:\n  tcp: 127.0.0.1:8181\n  token: 0123456789abcdef0\naccess:\n  tokens:\n  - token: 0123456789abcdef0\n    access_point: room\n", "access.tokens[0].token"},
		{"fixity:\n  sweeps:\n  - name: a\n    urims: [http://x/]\n    schedule: \"61 * * * *\"\n    archive_hosts: [x]\n", "fixity.sweeps[0].schedule"},
		{"fixity:\n  sweeps:\n  - name: a\n    urims: [http://x/]\n", "fixity.sweeps[0].archive_hosts"},
		{"fixity:\n  sweeps:\n  - name: a\n    archive_hosts: [x]\n", "fixity.sweeps[0].urims"},
		{"fixity:\n  sweeps:\n  - name: a\n    urims: [http://x/]\n    archive_hosts: [x]\n    evidence: always\n", "fixity.sweeps[0].evidence"},
		{"aggregate:\n  archives:\n  - name: a\n    timemap: ftp://x/\n", "aggregate.archives[0].timemap"},
		{"aggregate:\n  deadline: 1ms\n  archives:\n  - name: a\n    timemap: http://x/tm/\n", "aggregate.deadline"},
		{"aggregate:\n  archives:\n  - name: a\n    timemap: http://x/tm/\n  - name: a\n    timemap: http://y/tm/\n", "aggregate.archives[1].name"},
		{"index:\n  scope: aggregate\naggregate:\n  archives:\n  - name: a\n    timemap: http://x/tm/\n", "ingest.scope"},
	} {
		c, err := ParseConfig([]byte(tc.yaml), "t.yaml", func(string) string { return "" })
		if err == nil {
			c.Defaults()
			err = c.Validate()
		}
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%q: error %v is not a ConfigError", tc.yaml, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.key+":") {
			t.Errorf("%q: error %q does not name %s", tc.yaml, err, tc.key)
		}
	}
	// Unknown keys are refused with the line.
	_, err := ParseConfig([]byte("listen:\n  tpc: 127.0.0.1:1\n"), "t.yaml", func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), "tpc") {
		t.Errorf("unknown key: %v", err)
	}
	// Non-loopback is allowed only explicitly.
	c, _ := ParseConfig([]byte("listen:\n  tcp: 10.1.2.3:8181\n  token: 0123456789abcdef0\n  allow_non_loopback: true\n"), "t.yaml", func(string) string { return "" })
	c.Defaults()
	if err := c.Validate(); err != nil {
		t.Errorf("allow_non_loopback: %v", err)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"gzip,deflate": true, "gzip, deflate": true, "deflate": false, "": false, "gzip;q=0": false,
		"*": true, "identity, *;q=0": false, "x-gzip": true, "deflate, gzip;q=0.5": true,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v", h, got)
		}
	}
}

// TestExampleConfigs keeps the shipped example configurations valid.
func TestExampleConfigs(t *testing.T) {
	env := map[string]string{"WAYSIDE_TOKEN": "example-token-0123456789", "WAYSIDE_CDX_TOKEN": "example-cdx-token-0123456789"}
	for _, p := range []string{"../examples/heritrix/wayside.yaml", "../examples/fixity-schedule/wayside.yaml", "../examples/aggregate/wayside.yaml"} {
		c, err := LoadConfig(p, func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		c.Defaults()
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}
