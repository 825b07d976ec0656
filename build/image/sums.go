package image

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Checksums returns the lines of a SHA256SUMS file (`sha256sum -c` reads it) for every regular
// file under dir whose path (relative, slash-separated) keep accepts, sorted by path.
func Checksums(dir string, keep func(rel string) bool) (string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || !keep(filepath.ToSlash(rel)) {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s  %s", hex.EncodeToString(h.Sum(nil)), filepath.ToSlash(rel)))
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.SortFunc(lines, func(a, b string) int { return strings.Compare(a[66:], b[66:]) })
	return strings.Join(lines, "\n") + "\n", nil
}
