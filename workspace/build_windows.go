package workspace

// myelin does not build for Windows: its commands, its sandbox and its
// own files' safety rest on POSIX process groups, file locks and opens
// that refuse symbolic links. On Windows, run it under WSL. This
// identifier is left undefined so that the build says so first.
var _ = myelin_runs_on_Linux_macOS_and_FreeBSD__on_Windows_run_it_under_WSL
