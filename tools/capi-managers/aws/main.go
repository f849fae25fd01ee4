// Command manager runs the Cluster API AWS provider (sigs.k8s.io/cluster-api-provider-aws/v2, pinned
// in go.mod) for the project's real-node tests: its AWSCluster, AWSMachine, AWSMachineTemplate and
// identity controllers, its EKS controllers, and all their admission and conversion webhooks, wired
// the way the provider's own command does, with the flags its Deployment passes.
//
// The provider's own main package cannot be built here: it links the ROSA controllers, which import
// github.com/openshift/rosa, a module the Go module proxy does not serve. So this command leaves out
// what needs it (ROSA, and the experimental MachinePool and EKS Fargate controllers, which share a
// package with ROSA's) and refuses to start when a feature gate asks for them, rather than ignore it.
package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/logs"
	logsv1 "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	infrav1beta1 "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta1"
	infrav1 "sigs.k8s.io/cluster-api-provider-aws/v2/api/v1beta2"
	eksbootstrapv1beta1 "sigs.k8s.io/cluster-api-provider-aws/v2/bootstrap/eks/api/v1beta1"
	eksbootstrapv1 "sigs.k8s.io/cluster-api-provider-aws/v2/bootstrap/eks/api/v1beta2"
	eksbootstrapcontrollers "sigs.k8s.io/cluster-api-provider-aws/v2/bootstrap/eks/controllers"
	"sigs.k8s.io/cluster-api-provider-aws/v2/controllers"
	ekscontrolplanev1beta1 "sigs.k8s.io/cluster-api-provider-aws/v2/controlplane/eks/api/v1beta1"
	ekscontrolplanev1 "sigs.k8s.io/cluster-api-provider-aws/v2/controlplane/eks/api/v1beta2"
	ekscontrolplanecontrollers "sigs.k8s.io/cluster-api-provider-aws/v2/controlplane/eks/controllers"
	expinfrav1beta1 "sigs.k8s.io/cluster-api-provider-aws/v2/exp/api/v1beta1"
	expinfrav1 "sigs.k8s.io/cluster-api-provider-aws/v2/exp/api/v1beta2"
	"sigs.k8s.io/cluster-api-provider-aws/v2/exp/controlleridentitycreator"
	"sigs.k8s.io/cluster-api-provider-aws/v2/exp/instancestate"
	"sigs.k8s.io/cluster-api-provider-aws/v2/feature"
	"sigs.k8s.io/cluster-api-provider-aws/v2/pkg/record"
	kubeadmcontrolplanev1 "sigs.k8s.io/cluster-api/api/controlplane/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/flags"
)

func main() {
	if err := run(); err != nil {
		klog.ErrorS(err, "manager failed")
		os.Exit(1)
	}
}

type options struct {
	leaderElect     bool
	leaseDuration   time.Duration
	renewDeadline   time.Duration
	retryPeriod     time.Duration
	leaderNamespace string
	watchNamespace  string
	watchFilter     string
	syncPeriod      time.Duration
	webhookPort     int
	webhookCertDir  string
	healthAddr      string
	clusterWorkers  int
	machineWorkers  int
	stateWorkers    int
	waitInfraPeriod time.Duration
	maxWaitManaged  time.Duration
	manager         flags.ManagerOptions
	logs            *logsv1.LoggingConfiguration
}

func parseFlags() *options {
	o := &options{logs: logsv1.NewLoggingConfiguration()}
	fs := pflag.CommandLine
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader before running the controllers.")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "Leader election lease duration.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "Leader election renew deadline.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "Leader election retry period.")
	fs.StringVar(&o.leaderNamespace, "leader-elect-namespace", "", "Namespace of the leader Lease (default: the pod's).")
	fs.StringVar(&o.watchNamespace, "namespace", "", "Reconcile only in this namespace (default: all).")
	fs.StringVar(&o.watchFilter, "watch-filter", "", "Reconcile only objects with this watch label value.")
	fs.DurationVar(&o.syncPeriod, "sync-period", 10*time.Minute, "Resync period of the caches.")
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port of the webhook server.")
	fs.StringVar(&o.webhookCertDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs/", "Folder of tls.crt and tls.key.")
	fs.StringVar(&o.healthAddr, "health-addr", ":9440", "Address of /healthz and /readyz.")
	fs.IntVar(&o.clusterWorkers, "awscluster-concurrency", 5, "AWSClusters reconciled at once.")
	fs.IntVar(&o.machineWorkers, "awsmachine-concurrency", 10, "AWSMachines reconciled at once.")
	fs.IntVar(&o.stateWorkers, "instance-state-concurrency", 5, "Instance state watches at once.")
	fs.DurationVar(&o.waitInfraPeriod, "wait-infra-period", time.Minute, "How often to wait for infrastructure to be ready.")
	fs.DurationVar(&o.maxWaitManaged, "max-wait-managed-resources", 30*time.Minute, "How long to wait for managed AWS resources.")
	logs.AddFlags(fs, logs.SkipLoggingConfigurationFlags())
	logsv1.AddFlags(o.logs, fs)
	feature.MutableGates.AddFlag(fs)
	flags.AddManagerOptions(fs, &o.manager)
	pflag.Parse()
	return o
}

func scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, clusterv1.AddToScheme, kubeadmcontrolplanev1.AddToScheme,
		infrav1.AddToScheme, infrav1beta1.AddToScheme, expinfrav1.AddToScheme, expinfrav1beta1.AddToScheme,
		ekscontrolplanev1.AddToScheme, ekscontrolplanev1beta1.AddToScheme,
		eksbootstrapv1.AddToScheme, eksbootstrapv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func run() error {
	o := parseFlags()
	if err := logsv1.ValidateAndApply(o.logs, nil); err != nil {
		return fmt.Errorf("log options: %w", err)
	}
	ctrl.SetLogger(klog.Background())
	for _, gate := range []struct {
		name    string
		enabled bool
	}{
		{"ROSA", feature.Gates.Enabled(feature.ROSA)},
		{"MachinePool", feature.Gates.Enabled(feature.MachinePool)},
		{"EKSFargate", feature.Gates.Enabled(feature.EKSFargate)},
	} {
		if gate.enabled {
			return fmt.Errorf("feature gate %s is not built into this manager (its controllers import github.com/openshift/rosa, which the Go module proxy does not serve)", gate.name)
		}
	}
	_, metrics, err := flags.GetManagerOptions(o.manager)
	if err != nil {
		return fmt.Errorf("manager flags: %w", err)
	}
	s, err := scheme()
	if err != nil {
		return err
	}
	var namespaces map[string]cache.Config
	if o.watchNamespace != "" {
		namespaces = map[string]cache.Config{o.watchNamespace: {}}
	}
	config := ctrl.GetConfigOrDie()
	config.UserAgent = "cluster-api-provider-aws-controller"
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                     s,
		Metrics:                    *metrics,
		LeaderElection:             o.leaderElect,
		LeaseDuration:              &o.leaseDuration,
		RenewDeadline:              &o.renewDeadline,
		RetryPeriod:                &o.retryPeriod,
		LeaderElectionResourceLock: resourcelock.LeasesResourceLock,
		LeaderElectionID:           "controller-leader-elect-capa",
		LeaderElectionNamespace:    o.leaderNamespace,
		Cache:                      cache.Options{DefaultNamespaces: namespaces, SyncPeriod: &o.syncPeriod},
		WebhookServer:              webhook.NewServer(webhook.Options{Port: o.webhookPort, CertDir: o.webhookCertDir}),
		HealthProbeBindAddress:     o.healthAddr,
	})
	if err != nil {
		return fmt.Errorf("new manager: %w", err)
	}
	record.InitFromRecorder(mgr.GetEventRecorderFor("aws-controller"))
	klog.InfoS("feature gates", "gates", fmt.Sprintf("%+v", feature.Gates))

	ctx := ctrl.SetupSignalHandler()
	workers := func(n int) controller.Options {
		return controller.Options{MaxConcurrentReconciles: n, RecoverPanic: ptr.To(true)}
	}
	gc := feature.Gates.Enabled(feature.ExternalResourceGC)
	altGC := gc && feature.Gates.Enabled(feature.AlternativeGCStrategy)
	tagUnmanaged := feature.Gates.Enabled(feature.TagUnmanagedNetworkResources)
	type setup struct {
		name string
		err  error
	}
	steps := []setup{
		{"AWSMachine controller", (&controllers.AWSMachineReconciler{
			Client: mgr.GetClient(), Log: ctrl.Log.WithName("controllers").WithName("AWSMachine"),
			Recorder: mgr.GetEventRecorderFor("awsmachine-controller"), WatchFilterValue: o.watchFilter,
			TagUnmanagedNetworkResources: tagUnmanaged, MaxWaitActiveUpdateDelete: o.maxWaitManaged,
		}).SetupWithManager(ctx, mgr, workers(o.machineWorkers))},
		{"AWSCluster controller", (&controllers.AWSClusterReconciler{
			Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("awscluster-controller"),
			WatchFilterValue: o.watchFilter, ExternalResourceGC: gc, AlternativeGCStrategy: altGC,
			TagUnmanagedNetworkResources: tagUnmanaged, MaxWaitActiveUpdateDelete: o.maxWaitManaged,
		}).SetupWithManager(ctx, mgr, workers(o.clusterWorkers))},
		{"AWSMachineTemplate controller", (&controllers.AWSMachineTemplateReconciler{
			Client: mgr.GetClient(), WatchFilterValue: o.watchFilter,
		}).SetupWithManager(ctx, mgr, workers(o.clusterWorkers))},
	}
	if feature.Gates.Enabled(feature.EventBridgeInstanceState) {
		steps = append(steps, setup{"AWSInstanceState controller", (&instancestate.AwsInstanceStateReconciler{
			Client: mgr.GetClient(), Log: ctrl.Log.WithName("controllers").WithName("AWSInstanceStateController"),
			WatchFilterValue: o.watchFilter,
		}).SetupWithManager(ctx, mgr, workers(o.stateWorkers))})
	}
	if feature.Gates.Enabled(feature.AutoControllerIdentityCreator) {
		steps = append(steps, setup{"AWSControllerIdentity controller", (&controlleridentitycreator.AWSControllerIdentityReconciler{
			Client: mgr.GetClient(), Log: ctrl.Log.WithName("controllers").WithName("AWSControllerIdentity"),
			WatchFilterValue: o.watchFilter,
		}).SetupWithManager(ctx, mgr, workers(o.clusterWorkers))})
	}
	steps = append(steps,
		setup{"AWSMachineTemplate webhook", (&infrav1.AWSMachineTemplate{}).SetupWebhookWithManager(mgr)},
		setup{"AWSCluster webhook", (&infrav1.AWSCluster{}).SetupWebhookWithManager(mgr)},
		setup{"AWSClusterTemplate webhook", (&infrav1.AWSClusterTemplate{}).SetupWebhookWithManager(mgr)},
		setup{"AWSClusterControllerIdentity webhook", (&infrav1.AWSClusterControllerIdentity{}).SetupWebhookWithManager(mgr)},
		setup{"AWSClusterRoleIdentity webhook", (&infrav1.AWSClusterRoleIdentity{}).SetupWebhookWithManager(mgr)},
		setup{"AWSClusterStaticIdentity webhook", (&infrav1.AWSClusterStaticIdentity{}).SetupWebhookWithManager(mgr)},
		setup{"AWSMachine webhook", (&infrav1.AWSMachine{}).SetupWebhookWithManager(mgr)},
	)
	if feature.Gates.Enabled(feature.EKS) {
		iam := feature.Gates.Enabled(feature.EKSEnableIAM)
		addRoles := feature.Gates.Enabled(feature.EKSAllowAddRoles)
		if addRoles && !iam {
			return fmt.Errorf("feature gate EKSAllowAddRoles needs EKSEnableIAM")
		}
		steps = append(steps,
			setup{"AWSManagedControlPlane controller", (&ekscontrolplanecontrollers.AWSManagedControlPlaneReconciler{
				Client: mgr.GetClient(), EnableIAM: iam, AllowAdditionalRoles: addRoles, WatchFilterValue: o.watchFilter,
				ExternalResourceGC: gc, AlternativeGCStrategy: altGC, WaitInfraPeriod: o.waitInfraPeriod,
				MaxWaitActiveUpdateDelete: o.maxWaitManaged, TagUnmanagedNetworkResources: tagUnmanaged,
			}).SetupWithManager(ctx, mgr, workers(o.clusterWorkers))},
			setup{"EKSConfig controller", (&eksbootstrapcontrollers.EKSConfigReconciler{
				Client: mgr.GetClient(), WatchFilterValue: o.watchFilter,
			}).SetupWithManager(ctx, mgr, workers(o.clusterWorkers))},
			setup{"AWSManagedCluster controller", (&controllers.AWSManagedClusterReconciler{
				Client: mgr.GetClient(), Recorder: mgr.GetEventRecorderFor("awsmanagedcluster-controller"),
				WatchFilterValue: o.watchFilter,
			}).SetupWithManager(ctx, mgr, workers(o.clusterWorkers))},
			setup{"AWSManagedControlPlane webhook", (&ekscontrolplanev1.AWSManagedControlPlane{}).SetupWebhookWithManager(mgr)},
			setup{"AWSManagedControlPlaneTemplate webhook", (&ekscontrolplanev1.AWSManagedControlPlaneTemplate{}).SetupWebhookWithManager(mgr)},
		)
	}
	for _, step := range steps {
		if step.err != nil {
			return fmt.Errorf("set up the %s: %w", step.name, step.err)
		}
	}
	if err := mgr.AddReadyzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("webhook", mgr.GetWebhookServer().StartedChecker()); err != nil {
		return err
	}
	klog.InfoS("starting the AWS provider manager")
	return mgr.Start(ctx)
}
