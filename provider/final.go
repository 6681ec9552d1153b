package provider

import "errors"

// Final marks err as one no attempt again can mend — an authorization
// that cannot be had (credentials or a token refused), a redirect out of
// the configured origin: the wire's sender ends its retries at once, and
// Transient says no, so the agent does not send the request again
// either. The marked error unwraps to err; a nil err stays nil.
func Final(err error) error {
	if err == nil {
		return nil
	}
	return final{err}
}

// IsFinal reports whether err, or an error it wraps, was marked Final.
func IsFinal(err error) bool {
	var f final
	return errors.As(err, &f)
}

type final struct{ error }

func (f final) Unwrap() error { return f.error }

// Unsent marks err as met before anything of the request was written —
// its authorization failed (credentials or a token that could not be
// had) — so that Unconnected, and with it NeverReached, says so: the
// provider never had the request (`run` and `chat` then store nothing of
// a new conversation). The marked error unwraps to err; a nil err stays nil.
func Unsent(err error) error {
	if err == nil {
		return nil
	}
	return unsent{err}
}

type unsent struct{ error }

func (u unsent) Unwrap() error { return u.error }
