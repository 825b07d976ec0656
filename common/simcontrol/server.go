package simcontrol

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
)

// Serve serves s on a loopback port and, when urlFile is set, writes the base URL there
// (atomically) so the harness can find it. It returns the URL and a function that stops it.
//
//	POST /outage?on=true|false
//	POST /throttle?burst=N&rate=R
//	POST /terminate?node=NAME
//	GET  /resources  -> []Resource
//	GET  /calls      -> Calls
//	GET  /secrets    -> []string
func Serve(s Sim, urlFile string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: Handler(s)}
	go srv.Serve(l) //nolint:errcheck // ends with Close
	url := "http://" + l.Addr().String()
	if urlFile != "" {
		if err := WriteFileAtomic(urlFile, url); err != nil {
			srv.Close()
			return "", nil, err
		}
	}
	return url, func() { srv.Close() }, nil
}

// Handler is the protocol's HTTP handler for s.
func Handler(s Sim) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /outage", func(w http.ResponseWriter, r *http.Request) {
		on, err := boolParam(r, "on")
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.SetOutage(on)
	})
	mux.HandleFunc("POST /throttle", func(w http.ResponseWriter, r *http.Request) {
		var burst int
		var rate float64
		if _, err := fmt.Sscan(r.URL.Query().Get("burst"), &burst); err != nil {
			http.Error(w, "burst: want an integer", http.StatusBadRequest)
			return
		}
		if _, err := fmt.Sscan(r.URL.Query().Get("rate"), &rate); err != nil {
			http.Error(w, "rate: want a number", http.StatusBadRequest)
			return
		}
		s.SetThrottle(burst, rate)
	})
	mux.HandleFunc("POST /terminate", func(w http.ResponseWriter, r *http.Request) {
		node := r.URL.Query().Get("node")
		if node == "" {
			http.Error(w, "node: required", http.StatusBadRequest)
			return
		}
		if err := s.Terminate(node); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
		}
	})
	mux.HandleFunc("GET /resources", func(w http.ResponseWriter, _ *http.Request) {
		res, err := s.Resources()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		writeJSON(w, res)
	})
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.Calls()) })
	mux.HandleFunc("GET /secrets", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, s.Secrets()) })
	return mux
}

func boolParam(r *http.Request, name string) (bool, error) {
	switch r.URL.Query().Get(name) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s: want true or false", name)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client sees a short body
}

// WriteFileAtomic writes content to path through a temporary file and a rename, so that a
// process polling the file (the ccm's cloud config, a harness waiting for a URL) never reads
// half of it. The file is 0600: a simulator's files hold its credentials.
func WriteFileAtomic(path, content string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(content)
	cerr := tmp.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing %s: %v %v", path, werr, cerr)
	}
	return os.Rename(tmp.Name(), path)
}
