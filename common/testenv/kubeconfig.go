package testenv

import (
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig for host that authenticates with token.
func WriteKubeconfig(path, host, token string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: host, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "user"}
	cfg.CurrentContext = "local"
	return clientcmd.WriteToFile(*cfg, path)
}
