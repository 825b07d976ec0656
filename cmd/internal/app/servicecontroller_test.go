package app

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	ccmapp "k8s.io/cloud-provider/app"
	"k8s.io/cloud-provider/names"
)

func TestServiceControllerOptionsSwapTheController(t *testing.T) {
	controllers := map[string]ccmapp.ControllerInitFuncConstructor{}
	for name, c := range ccmapp.DefaultInitFuncConstructors {
		controllers[name] = c
	}
	addServiceControllerOptions(pflag.NewFlagSet("ccm", pflag.ContinueOnError), controllers)
	lib := ccmapp.DefaultInitFuncConstructors[names.ServiceLBController]
	sc := controllers[names.ServiceLBController]
	if reflect.ValueOf(sc.Constructor).Pointer() == reflect.ValueOf(lib.Constructor).Pointer() {
		t.Error("the service controller was not swapped")
	}
	if sc.InitContext != lib.InitContext {
		t.Error("the client name must stay the library's (RBAC is granted to it)")
	}
	if len(controllers) != len(ccmapp.DefaultInitFuncConstructors) {
		t.Error("no controller may be added or lost")
	}
	if reflect.ValueOf(ccmapp.DefaultInitFuncConstructors[names.ServiceLBController].Constructor).Pointer() != reflect.ValueOf(lib.Constructor).Pointer() {
		t.Error("the library's own table must stay unchanged")
	}
}

func TestServiceControllerFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" for valid
	}{
		{nil, ""},
		{[]string{"--service-controller=ccm"}, ""},
		{[]string{"--service-controller=ccm", "--load-balancer-class=example.com/vip", "--load-balancer-class=example.com/internal"}, ""},
		{[]string{"--service-controller=ccm", "--load-balancer-class=example.com/vip", "--serve-unclassed-services=false"}, ""},
		{[]string{"--service-controller=ccm", "--serve-unclassed-services=false"}, "needs at least one --load-balancer-class"},
		{[]string{"--service-controller=ccm", "--load-balancer-class=vip"}, `--load-balancer-class "vip"`},
		{[]string{"--service-controller=library", "--load-balancer-class=example.com/vip"}, "need --service-controller=ccm"},
		{[]string{"--service-controller=other"}, "--service-controller"},
		{[]string{"--orphan-grace-period=0", "--orphan-collection-period=1m"}, ""},
		{[]string{"--orphan-grace-period=-1s"}, "--orphan-grace-period must not be negative"},
		{[]string{"--orphan-collection-period=-1m"}, "must not be negative"},
		{[]string{"--load-balancer-resync-period=0"}, ""},
		{[]string{"--load-balancer-resync-period=-5m"}, "--load-balancer-resync-period must not be negative"},
		{[]string{"--node-sync-delay=0"}, ""},
		{[]string{"--node-sync-delay=-1s"}, "--node-sync-delay must be between 0 and 1m"},
		{[]string{"--node-sync-delay=2m"}, "--node-sync-delay must be between 0 and 1m"},
	} {
		fs := pflag.NewFlagSet("ccm", pflag.ContinueOnError)
		o := addServiceControllerOptions(fs, map[string]ccmapp.ControllerInitFuncConstructor{})
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		err := o.validate()
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: got %v, want an error with %q", tc.args, err, tc.err)
		}
	}
	fs := pflag.NewFlagSet("ccm", pflag.ContinueOnError)
	o := addServiceControllerOptions(fs, map[string]ccmapp.ControllerInitFuncConstructor{})
	if o.orphans.Grace != time.Hour || o.orphans.Period <= 0 {
		t.Errorf("orphan defaults: grace %v, period %v; want an hour of grace and collection on", o.orphans.Grace, o.orphans.Period)
	}
	if o.resync != 10*time.Minute {
		t.Errorf("drift resync default %v, want 10m", o.resync)
	}
	if o.nodeDelay != time.Second {
		t.Errorf("node sync delay default %v, want 1s", o.nodeDelay)
	}
	if f := fs.Lookup("service-controller"); f == nil || !f.Hidden {
		t.Error("--service-controller must exist and be hidden")
	}
}
