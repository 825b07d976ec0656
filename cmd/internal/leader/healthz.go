package leader

import (
	"context"

	cloudprovider "k8s.io/cloud-provider"
	ccmapp "k8s.io/cloud-provider/app"
	ccmconfig "k8s.io/cloud-provider/app/config"
	genericcontrollermanager "k8s.io/controller-manager/app"
	"k8s.io/controller-manager/controller"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
)

// HealthzController names the check of ccm's leader election on /healthz (/healthz/<name>).
//
// The library creates its /healthz handler inside app.Run and lets nothing but a controller add
// a check to it: startControllers mounts, under the controller's name, the HealthChecker of
// every started controller that is controller.HealthCheckable. So the check is a controller
// that does nothing else. Being one, --controllers can turn it off ("*,-leader-election");
// EnableHealthz keeps it on when --controllers lists controllers without "*".
const HealthzController = "leader-election"

// HealthzInit is the controller table entry of HealthzController. election returns ccm's
// election when it runs (nil otherwise: the library elects itself, with its own check, or
// nothing elects); it is read when the library starts the controllers, after InitCloudFunc.
func HealthzInit(election func() *Election) ccmapp.ControllerInitFuncConstructor {
	return ccmapp.ControllerInitFuncConstructor{
		Constructor: func(ccmapp.ControllerInitContext, *ccmconfig.CompletedConfig, cloudprovider.Interface) ccmapp.InitFunc {
			return func(context.Context, genericcontrollermanager.ControllerContext) (controller.Interface, bool, error) {
				e := election()
				if e == nil {
					return nil, false, nil
				}
				return healthzController{e}, true, nil
			}
		},
	}
}

// EnableHealthz adds HealthzController to an explicit --controllers list that neither names it
// nor turns it off, so listing the controllers one runs does not drop the check by accident.
func EnableHealthz(c *ccmconfig.CompletedConfig) {
	list := &c.ComponentConfig.Generic.Controllers
	for _, name := range *list {
		if name == "*" || name == HealthzController || name == "-"+HealthzController {
			return
		}
	}
	*list = append(*list, HealthzController)
}

type healthzController struct{ e *Election }

func (h healthzController) Name() string { return HealthzController }

// HealthChecker implements controller.HealthCheckable.
func (h healthzController) HealthChecker() controllerhealthz.UnnamedHealthChecker {
	return h.e.health
}
