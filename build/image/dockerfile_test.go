package image

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The Dockerfile cannot be built on a machine without a Docker engine, so this checks that it
// states what Build produces: the same user, entrypoint and labels, a static binary with only
// the chosen provider's tag, and a check that the binary lists its providers.
func TestDockerfileMatchesBuild(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	img, err := Build(Spec{Binary: os.Args[0], Provider: "PROVIDER", Version: "VERSION"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"USER " + cfg.Config.User + "\n",
		`ENTRYPOINT ["` + strings.Join(cfg.Config.Entrypoint, `", "`) + `"]`,
		"CGO_ENABLED=0 go build -trimpath -tags \"${PROVIDER}\"",
		"/out/ccm providers",
		"COPY --from=build /out/ccm " + cfg.Config.Entrypoint[0],
	}
	for k, v := range cfg.Config.Labels { // Build's values, written with the Dockerfile's ARGs
		v = strings.NewReplacer("PROVIDER", "${PROVIDER}", "VERSION", "${VERSION}").Replace(v)
		want = append(want, k+`="`+v+`"`)
	}
	for _, w := range want {
		if !strings.Contains(df, w) {
			t.Errorf("the Dockerfile lacks %q, which the daemonless image has", w)
		}
	}
	if n := len(regexp.MustCompile(`(?m)(^LABEL\s+|^\s+)[a-z][a-z.]*="`).FindAllString(df, -1)); n != len(cfg.Config.Labels) {
		t.Errorf("the Dockerfile sets %d labels, the image %d", n, len(cfg.Config.Labels))
	}
}
