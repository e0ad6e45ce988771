package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// slurmOptions are the slurm executor's: what a site's sbatch needs to
// place the job array, and how many array tasks share the sweep's tasks.
type slurmOptions struct {
	tasks                    int
	partition, time, account string
	extra                    []string
	noWait                   bool
	sbatch, scancel          string // the commands (a test may point them elsewhere)
}

func (o *slurmOptions) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&o.tasks, "slurm-tasks", 0, "array tasks the sweep's tasks are shared among (default: one per task, at most 1000)")
	f.StringVar(&o.partition, "slurm-partition", "", "the Slurm partition (sbatch --partition)")
	f.StringVar(&o.time, "slurm-time", "", "each array task's time limit (sbatch --time, e.g. 30:00 or 1-00:00:00)")
	f.StringVar(&o.account, "slurm-account", "", "the account charged (sbatch --account)")
	f.StringArrayVar(&o.extra, "slurm-option", nil, "another sbatch option, as it is written on an #SBATCH line (repeatable; e.g. --qos=short)")
	f.BoolVar(&o.noWait, "slurm-no-wait", false, "submit the job array and return; merge later with: aaemu sweep merge OUT")
	o.sbatch, o.scancel = "sbatch", "scancel"
}

// maxArray is the most array tasks the executor asks for by default: a
// cluster's MaxArraySize is 1001 unless its administrators raised it.
const maxArray = 1000

// slurmRun submits the sweep as one job array, waits for it and merges.
// Every array task runs "aaemu sweep FILE --shard $SLURM_ARRAY_TASK_ID/n"
// into OUT/parts, so OUT and the sweep file must be on a file system the
// compute nodes share (as a cluster's home or scratch is), and this aaemu
// binary must run there.
func (o *sweepRun) slurmRun(ctx context.Context, stdout, stderr io.Writer) error {
	s, err := o.parse()
	if err != nil {
		return err
	}
	n := len(s.Tasks())
	arr := o.slurm.tasks
	switch {
	case arr == 0:
		arr = min(n, maxArray)
	case arr < 0 || arr > n:
		return fmt.Errorf("--slurm-tasks %d: want 1..%d (the sweep's tasks)", arr, n)
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	if _, err := o.partsDir(s); err != nil {
		return err
	}
	script, err := o.writeBatchScript(arr)
	if err != nil {
		return err
	}
	args := []string{"--parsable"}
	if !o.slurm.noWait {
		args = append(args, "--wait")
	}
	cmd := exec.Command(o.slurm.sbatch, append(args, script)...)
	cmd.Stderr = stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("slurm executor: %w (is Slurm's sbatch on the PATH?)", err)
	}
	// --parsable prints the job id (and cluster) at once, then --wait
	// waits for the whole array.
	job := ""
	if sc := bufio.NewScanner(pipe); sc.Scan() {
		job, _, _ = strings.Cut(strings.TrimSpace(sc.Text()), ";")
	}
	go io.Copy(io.Discard, pipe)
	if job != "" {
		fmt.Fprintf(stdout, "submitted %d tasks as Slurm job array %s (%d array tasks; logs in %s)\n", n, job, arr, filepath.Join(o.out, "slurm"))
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		// Ctrl-C: the array stops; what finished stays in the parts.
		if job != "" {
			exec.Command(o.slurm.scancel, job).Run()
		}
		cmd.Process.Kill()
		<-waited
		mergeErr := mergeSweep(stdout, o.out)
		return errors.Join(fmt.Errorf("interrupted: job %s cancelled", job), mergeErr)
	}
	if o.slurm.noWait {
		if err != nil {
			return fmt.Errorf("sbatch: %w", err)
		}
		fmt.Fprintf(stdout, "when it has run: aaemu sweep merge %s\n", o.out)
		return nil
	}
	// sbatch --wait fails when an array task did; the merge says which.
	mergeErr := mergeSweep(stdout, o.out)
	if err != nil && mergeErr == nil {
		return fmt.Errorf("sbatch: %w", err)
	}
	return mergeErr
}

// writeBatchScript writes OUT/slurm/sweep.sbatch: the job array, each task
// running its share of the sweep with this aaemu.
func (o *sweepRun) writeBatchScript(arr int) (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	abs := func(p string) (string, error) { return filepath.Abs(p) }
	file, err := abs(o.file)
	if err != nil {
		return "", err
	}
	out, err := abs(o.out)
	if err != nil {
		return "", err
	}
	logs := filepath.Join(out, "slurm")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# An aaemu sweep as a Slurm job array: each array task runs its share.\n")
	line := func(opt string) { fmt.Fprintf(&b, "#SBATCH %s\n", opt) }
	line("--job-name=aaemu-sweep")
	line(fmt.Sprintf("--array=0-%d", arr-1))
	line("--ntasks=1")
	line(fmt.Sprintf("--cpus-per-task=%d", o.jobs))
	line("--output=" + filepath.Join(logs, "task-%a.log"))
	if o.slurm.partition != "" {
		line("--partition=" + o.slurm.partition)
	}
	if o.slurm.time != "" {
		line("--time=" + o.slurm.time)
	}
	if o.slurm.account != "" {
		line("--account=" + o.slurm.account)
	}
	for _, x := range o.slurm.extra {
		if !strings.HasPrefix(x, "-") || strings.ContainsAny(x, "\n\r") {
			return "", fmt.Errorf("--slurm-option %q: want one sbatch option such as --qos=short", x)
		}
		line(x)
	}
	fmt.Fprintf(&b, "exec %s sweep %s --shard \"$SLURM_ARRAY_TASK_ID/%d\" --out %s -j %d --partitions %d\n",
		shellQuote(self), shellQuote(file), arr, shellQuote(out), o.jobs, o.partitions)
	path := filepath.Join(logs, "sweep.sbatch")
	return path, os.WriteFile(path, []byte(b.String()), 0o755)
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
