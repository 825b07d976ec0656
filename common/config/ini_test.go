package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

type vcenter struct {
	User string
	Port int
}

type testConfig struct {
	Global struct {
		Region   string
		Password string
		Port     int
		Timeout  Duration
		Insecure bool `gcfg:"insecure-flag"`
	}
	VirtualCenter map[string]*vcenter
}

func (c *testConfig) SetDefaults() {
	c.Global.Port = 443
	c.Global.Timeout = Duration{30 * time.Second}
}

func (c *testConfig) Validate() Problems {
	var ps Problems
	if c.Global.Region == "" {
		ps.Add("Global", "region", "is required")
	}
	if c.Global.Port <= 0 || c.Global.Port > 65535 {
		ps.Add("Global", "port", "must be between 1 and 65535, got %d", c.Global.Port)
	}
	return ps
}

func read(t *testing.T, src string) (*testConfig, error) {
	t.Helper()
	var c testConfig
	var r *strings.Reader
	if src != "\x00nil" {
		r = strings.NewReader(src)
		return &c, ReadINI(r, &c)
	}
	return &c, ReadINI(nil, &c)
}

func problemsOf(t *testing.T, err error) []Problem {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want *config.Error, got %T: %v", err, err)
	}
	return ce.Problems
}

func TestReadINI(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    func(t *testing.T, c *testConfig)
		wantErr []string // substrings, one per problem, in line order
	}{
		{
			name: "valid with defaults",
			src:  "[Global]\nregion = eu-1\n",
			want: func(t *testing.T, c *testConfig) {
				if c.Global.Region != "eu-1" || c.Global.Port != 443 || c.Global.Timeout.Duration != 30*time.Second {
					t.Errorf("got %+v", c.Global)
				}
			},
		},
		{
			name: "durations and dashed keys",
			src:  "[Global]\nregion = r\ntimeout = 2m\ninsecure-flag = true\n",
			want: func(t *testing.T, c *testConfig) {
				if c.Global.Timeout.Duration != 2*time.Minute || !c.Global.Insecure {
					t.Errorf("got %+v", c.Global)
				}
			},
		},
		{
			name:    "typo key names key and line",
			src:     "[Global]\nregion = r\n\nregoin = r2\n",
			wantErr: []string{`line 4: [Global] regoin: unknown key`},
		},
		{
			name:    "unknown section",
			src:     "[Global]\nregion = r\n[Lables]\nzone = z\n",
			wantErr: []string{`line 3: [Lables] unknown section`},
		},
		{
			name:    "bad duration",
			src:     "[Global]\nregion = r\ntimeout = 5\n",
			wantErr: []string{`line 3: [Global] timeout: invalid duration: use a number with a unit`},
		},
		{
			name:    "unparsable value is not echoed",
			src:     "[Global]\nregion = r\nport = s3cr\n",
			wantErr: []string{`line 3: [Global] port: failed to parse the value as int`},
		},
		{
			name:    "value cut at semicolon is reported without the value",
			src:     "[Global]\nregion = r\npassword = s3cr;et\n",
			wantErr: []string{`line 3: [Global] password: value is cut at an unquoted ';'`},
		},
		{
			name:    "value cut at hash",
			src:     "[Global]\nregion = r\npassword = abc#def\n",
			wantErr: []string{`line 3: [Global] password: value is cut at an unquoted '#'`},
		},
		{
			name: "quoted semicolon is kept",
			src:  "[Global]\nregion = r\npassword = \"s3cr;et#x\"\n",
			want: func(t *testing.T, c *testConfig) {
				if c.Global.Password != "s3cr;et#x" {
					t.Errorf("password not read whole")
				}
			},
		},
		{
			name: "inline comment after a space is a comment",
			src:  "[Global]\nregion = r ; the region\n",
			want: func(t *testing.T, c *testConfig) {
				if c.Global.Region != "r" {
					t.Errorf("region = %q", c.Global.Region)
				}
			},
		},
		{
			name: "subsections",
			src:  "[Global]\nregion = r\n[VirtualCenter \"10.0.0.1\"]\nuser = a\nport = 8443\n",
			want: func(t *testing.T, c *testConfig) {
				vc := c.VirtualCenter["10.0.0.1"]
				if vc == nil || vc.User != "a" || vc.Port != 8443 {
					t.Errorf("got %+v", vc)
				}
			},
		},
		{
			name:    "unknown key in subsection",
			src:     "[Global]\nregion = r\n[VirtualCenter \"vc1\"]\nusr = a\n",
			wantErr: []string{`line 4: [VirtualCenter "vc1"] usr: unknown key`},
		},
		{
			name:    "validation problem gets the key's line",
			src:     "[Global]\nregion = r\nport = 70000\n",
			wantErr: []string{`line 3: [Global] port: must be between 1 and 65535, got 70000`},
		},
		{
			name:    "missing required key points at its section",
			src:     "\n[Global]\nport = 1\n",
			wantErr: []string{`line 2: [Global] region: is required`},
		},
		{
			name:    "syntax error has a line",
			src:     "[Global]\nregion = r\n[Global\n",
			wantErr: []string{`line 3: `},
		},
		{
			// The misspelled key is also a missing one: both are said at once.
			name:    "several problems are all reported",
			src:     "[Global]\nregoin = r\nprt = 1\n",
			wantErr: []string{`line 1: [Global] region: is required`, `line 2: [Global] regoin: unknown key`, `line 3: [Global] prt: unknown key`},
		},
		{
			// Each unparseable value stops gcfg; its line is left out and the file read again,
			// so one reading finds them all, the unknown key and the validation problem too.
			name: "every kind of problem in one reading",
			src:  "[Global]\nport = x\ntimeout = 5\nregoin = r\nport = 70000\n[Lables]\nzone = z\n",
			wantErr: []string{`line 1: [Global] region: is required`, `line 2: [Global] port: failed to parse`,
				`line 3: [Global] timeout: invalid duration`, `line 4: [Global] regoin: unknown key`, `line 6: [Lables] unknown section`},
		},
		{
			name:    "nil reader applies defaults and validates",
			src:     "\x00nil",
			wantErr: []string{`[Global] region: is required`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := read(t, tt.src)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				tt.want(t, c)
				return
			}
			ps := problemsOf(t, err)
			if len(ps) != len(tt.wantErr) {
				t.Fatalf("want %d problems, got %d: %v", len(tt.wantErr), len(ps), err)
			}
			for i, want := range tt.wantErr {
				if got := ps[i].String(); !strings.Contains(got, want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got, want)
				}
			}
			if strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "abc") {
				t.Errorf("error echoes a secret value: %v", err)
			}
		})
	}
}

func TestDurationRejectsNegative(t *testing.T) {
	var d Duration
	if err := d.UnmarshalText([]byte("-5s")); err == nil {
		t.Fatal("negative duration accepted")
	}
	if err := d.UnmarshalText([]byte("1h30m")); err != nil || d.Duration != 90*time.Minute {
		t.Fatalf("got %v, %v", d, err)
	}
}

func FuzzReadINI(f *testing.F) {
	for _, s := range []string{
		"[Global]\nregion = r\n",
		"[Global]\nregion = \"a;b\"\ntimeout = 5s\n",
		"[VirtualCenter \"h\"]\nuser = u\n",
		"[Global\n",
		"x = 1\n",
		"[Global]\npassword = a#b\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		var c testConfig
		err := ReadINI(strings.NewReader(src), &c)
		if err == nil {
			return
		}
		var ce *Error
		if errors.As(err, &ce) {
			for _, p := range ce.Problems {
				if p.Msg == "" {
					t.Fatalf("problem without a message in %q", src)
				}
			}
		}
	})
}

// LineOf finds a key's own line (names as gcfg matches them), 0 for a key not written: a
// notice must not point at the section header as if the key were there.
func TestLineOf(t *testing.T) {
	lineOf := LineOf([]byte("; comment\n[Global]\nauth-url = x\n\n[LoadBalancerClass \"c\"]\nsubnet_id = s\n[Global]\nTLS-Insecure = True\n"))
	for _, tc := range []struct {
		section, sub, key string
		want              int
	}{
		{"Global", "", "auth-url", 3},
		{"global", "", "tls-insecure", 8},
		{"LoadBalancerClass", "c", "subnet-id", 6},
		{"LoadBalancerClass", "d", "subnet-id", 0},
		{"Global", "", "password", 0},
	} {
		if got := lineOf(tc.section, tc.sub, tc.key); got != tc.want {
			t.Errorf("[%s %q] %s: line %d, want %d", tc.section, tc.sub, tc.key, got, tc.want)
		}
	}
}
