//go:build unix

package child

import (
	"os/exec"
	"testing"
)

// BenchmarkStart pairs a plain exec with Start of the same command, run to
// its end: Start's cost per command is the watcher (a fork and exec of
// /bin/sh), the hop to the fork thread, and the group's kill and reaping.
// `bash -c true` is what shell--run starts; `true` shows the cost against
// the cheapest command there is.
func BenchmarkStart(b *testing.B) {
	for _, args := range [][]string{{"bash", "-c", "true"}, {"true"}} {
		name := args[0]
		b.Run(name+"/exec", func(b *testing.B) {
			for b.Loop() {
				if err := exec.Command(args[0], args[1:]...).Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/child", func(b *testing.B) {
			for b.Loop() {
				cmd := exec.Command(args[0], args[1:]...)
				g, err := Start(cmd)
				if err != nil {
					b.Fatal(err)
				}
				err = g.Wait()
				g.Kill()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
