package kubectl

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// reasonDeadlineExceeded is the Progressing reason of a stalled rollout
// (internal/controller/machinedeployment/progress.go).
const reasonDeadlineExceeded = "ProgressDeadlineExceeded"

func newRolloutStatusCommand(o *Options) *cobra.Command {
	var watching bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status NAME",
		Short: "Wait until the rollout is done; exit non-zero when it stalls (ProgressDeadlineExceeded) or --timeout passes",
		Example: `  kubectl millwright rollout status web
  kubectl millwright rollout status machinedeployment/web --watch=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			c, md, err := o.getMD(ctx, args[0])
			if err != nil {
				return err
			}
			return o.rolloutStatus(ctx, c, md, watching)
		},
	}
	o.mdArgs(cmd)
	cmd.Flags().BoolVarP(&watching, "watch", "w", true, "Watch the rollout until it is done; --watch=false prints the state once.")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "How long to wait before giving up; 0 waits for ever.")
	return cmd
}

// rolloutState is kubectl's reading of a Deployment's status, applied to a
// MachineDeployment: a message, whether the rollout is done, or an error
// when it stalled.
func rolloutState(md *v1alpha1.MachineDeployment) (string, bool, error) {
	name := md.Name
	if md.Generation > md.Status.ObservedGeneration {
		return "Waiting for machinedeployment spec update to be observed...\n", false, nil
	}
	if c := meta.FindStatusCondition(md.Status.Conditions, v1alpha1.ProgressingCondition); c != nil && c.Reason == reasonDeadlineExceeded {
		return "", false, fmt.Errorf("machinedeployment %q exceeded its progress deadline", name)
	}
	st, want := md.Status, md.Spec.Replicas
	switch {
	case st.UpdatedReplicas < want:
		return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: %d out of %d new Machines have been updated...\n", name, st.UpdatedReplicas, want), false, nil
	case st.Replicas > st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: %d old Machines are pending termination...\n", name, st.Replicas-st.UpdatedReplicas), false, nil
	case st.AvailableReplicas < st.UpdatedReplicas:
		return fmt.Sprintf("Waiting for machinedeployment %q rollout to finish: %d of %d updated Machines are available...\n", name, st.AvailableReplicas, st.UpdatedReplicas), false, nil
	}
	return fmt.Sprintf("machinedeployment %q successfully rolled out\n", name), true, nil
}

// rolloutStatus prints each new state until the rollout is done, it
// stalls, or ctx ends; without watch it prints the state once.
func (o *Options) rolloutStatus(ctx context.Context, c client.WithWatch, md *v1alpha1.MachineDeployment, watching bool) error {
	last := ""
	show := func(md *v1alpha1.MachineDeployment) (bool, error) {
		msg, done, err := rolloutState(md)
		if err != nil {
			return true, err
		}
		if msg != last {
			fmt.Fprint(o.Out, msg)
			last = msg
		}
		return done, nil
	}
	if done, err := show(md); done || err != nil || !watching {
		return err
	}
	rv := md.ResourceVersion
	for {
		w, err := c.Watch(ctx, &v1alpha1.MachineDeploymentList{}, client.InNamespace(md.Namespace),
			client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", md.Name)},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			return err
		}
		done, err := func() (bool, error) {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return true, waitError(ctx, md.Name)
				case ev, ok := <-w.ResultChan():
					if !ok {
						return false, nil // the server closed the watch: watch again from rv
					}
					switch ev.Type {
					case watch.Deleted:
						return true, fmt.Errorf("machinedeployment %q was deleted", md.Name)
					case watch.Error:
						rv = "" // too old (410 Gone) or broken: read afresh, then watch from there
						return false, nil
					}
					cur, ok := ev.Object.(*v1alpha1.MachineDeployment)
					if !ok {
						continue
					}
					rv = cur.ResourceVersion
					if done, err := show(cur); done || err != nil {
						return true, err
					}
				}
			}
		}()
		if done {
			return err
		}
		if rv == "" {
			cur := &v1alpha1.MachineDeployment{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(md), cur); err != nil {
				if ctx.Err() != nil {
					return waitError(ctx, md.Name)
				}
				return err
			}
			if done, err := show(cur); done || err != nil {
				return err
			}
			rv = cur.ResourceVersion
		}
	}
}

func waitError(ctx context.Context, name string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("timed out waiting for the rollout of machinedeployment %q", name)
	}
	return ctx.Err()
}
