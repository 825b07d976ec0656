package provider

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

func fakeFactory(r io.Reader) (cloudprovider.Interface, error) {
	if r != nil {
		b, _ := io.ReadAll(r)
		if strings.Contains(string(b), "bad") {
			return nil, errors.New("line 1: bad value")
		}
	}
	return &fakecloud.Cloud{}, nil
}

func TestRegisterRejects(t *testing.T) {
	if err := Register(Provider{Name: "", Factory: fakeFactory}); err == nil {
		t.Error("empty name accepted")
	}
	if err := Register(Provider{Name: "reg-nil"}); err == nil {
		t.Error("nil factory accepted")
	}
	if err := Register(Provider{Name: "reg-dup", Factory: fakeFactory}); err != nil {
		t.Fatal(err)
	}
	if err := Register(Provider{Name: "reg-dup", Factory: fakeFactory}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate: %v", err)
	}
	cloudprovider.RegisterCloudProvider("reg-foreign", fakeFactory)
	if err := Register(Provider{Name: "reg-foreign", Factory: fakeFactory}); err == nil {
		t.Error("name taken in k8s.io/cloud-provider's registry accepted")
	}
	if !cloudprovider.IsCloudProvider("reg-dup") {
		t.Error("not registered with k8s.io/cloud-provider")
	}
}

func TestNewAndErrors(t *testing.T) {
	MustRegister(Provider{Name: "new-ok", Factory: fakeFactory})
	dir := t.TempDir()
	good := filepath.Join(dir, "good.conf")
	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(good, []byte("fine"), 0o600)
	os.WriteFile(bad, []byte("bad"), 0o600)

	if _, err := New("new-ok", ""); err != nil {
		t.Errorf("nil config: %v", err)
	}
	if _, err := New("new-ok", good); err != nil {
		t.Errorf("good config: %v", err)
	}
	missing := filepath.Join(dir, "missing.conf")
	if _, err := New("new-ok", missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := New("new-ok", bad); err == nil || !strings.Contains(err.Error(), bad+": line 1") {
		t.Errorf("bad config: %v", err)
	}
	_, err := New("nope", "")
	var nc *NotCompiledError
	if !errors.As(err, &nc) {
		t.Fatalf("unknown provider: %v", err)
	}
	for _, want := range []string{`"nope"`, "new-ok", "-tags nope"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := New("", ""); err == nil || !strings.Contains(err.Error(), "--cloud-provider") {
		t.Errorf("empty name: %v", err)
	}
	if err := CheckConfig("new-ok", bad); err == nil {
		t.Error("CheckConfig accepted a bad config")
	}
	if err := CheckConfig("new-ok", good); err != nil {
		t.Errorf("CheckConfig: %v", err)
	}
}

func TestNamesSortedAndDescribe(t *testing.T) {
	MustRegister(Provider{Name: "zz-names", Factory: fakeFactory})
	MustRegister(Provider{Name: "aa-names", Factory: fakeFactory})
	names := Names()
	for i := 1; i < len(names); i++ {
		if names[i-1] > names[i] {
			t.Fatalf("not sorted: %v", names)
		}
	}
	if d := Describe(); !strings.Contains(d, "aa-names") || !strings.Contains(d, "zz-names") {
		t.Errorf("Describe() = %q", d)
	}
	if d := describe(nil); !strings.Contains(d, "no providers") {
		t.Errorf("describe(nil) = %q", d)
	}
}

// check-config --cluster-name builds the cloud: the config is parsed once (a factory's start-up
// report is printed once), and a bad config gives CheckConfig's error.
func TestCheckConfigAndNewParsesOnce(t *testing.T) {
	calls := 0
	MustRegister(Provider{Name: "check-once", Factory: func(r io.Reader) (cloudprovider.Interface, error) {
		calls++
		return fakeFactory(r)
	}})
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.conf"), filepath.Join(dir, "bad.conf")
	os.WriteFile(good, []byte("fine"), 0o600)
	os.WriteFile(bad, []byte("bad"), 0o600)
	if c, err := CheckConfigAndNew("check-once", good); err != nil || c == nil || calls != 1 {
		t.Errorf("good config: cloud %v, err %v, factory called %d times; want a cloud from one call", c, err, calls)
	}
	c, err := CheckConfigAndNew("check-once", bad)
	want := CheckConfig("check-once", bad)
	if c != nil || err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("bad config: cloud %v, err %v; want no cloud and CheckConfig's error %v", c, err, want)
	}
	if _, err := CheckConfigAndNew("no-such-provider", good); err == nil {
		t.Error("unknown provider accepted")
	}
}
