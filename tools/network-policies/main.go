// Command network-policies is the real node's NetworkPolicy agent: the controller of
// sigs.k8s.io/kube-network-policies (pinned in go.mod), which judges the first packet of every
// connection that the node queues to it (nfqueue) against the cluster's NetworkPolicies, and drops
// what they do not allow.
//
// The module's own command only runs as a pod (in-cluster configuration); the node runs its
// components as processes in its namespaces with a kubeconfig, so this command takes one. Everything
// else is the module's controller, as its command wires it (no admin network policies).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/kube-network-policies/pkg/networkpolicy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "network-policies: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	nodeName := flag.String("hostname-override", "", "the name of the Node this agent enforces for (required)")
	queueID := flag.Int("nfqueue-id", 100, "the nfqueue the node sends the packets to judge to")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *nodeName == "" {
		return fmt.Errorf("--kubeconfig and --hostname-override are required")
	}
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("read %s: %w", *kubeconfig, err)
	}
	config.UserAgent = "kube-network-policies"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, unix.SIGTERM)
	defer cancel()

	factory := informers.NewSharedInformerFactory(client, 0)
	controller, err := networkpolicy.NewController(
		client,
		factory.Networking().V1().NetworkPolicies(),
		factory.Core().V1().Namespaces(),
		factory.Core().V1().Pods(),
		nil, nil, nil, nil,
		networkpolicy.Config{
			QueueID:  *queueID,
			NodeName: *nodeName,
			// A fail-closed agent: a packet it cannot judge is dropped, never let through.
			FailOpen: false,
		},
	)
	if err != nil {
		return fmt.Errorf("start the network policy controller: %w", err)
	}
	factory.Start(ctx.Done())
	return controller.Run(ctx)
}
