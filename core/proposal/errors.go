package proposal

import (
	"errors"

	"github.com/sluicehq/sluice/core/errcode"
)

// Coded is err as the *errcode.Error every boundary answers with, when it
// is one of this package's sentinels: the one place they become codes.
// The sentinel stays in the chain, so errors.Is still finds it. Any other
// error is returned as it is.
func Coded(err error) error {
	switch {
	case errors.Is(err, ErrDigestMismatch):
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: "the digest does not match the proposal's content", Err: err}
	case errors.Is(err, ErrInvalidTransition):
		return &errcode.Error{Code: errcode.ProposalTerminal, Msg: "the proposal is no longer pending", Err: err}
	case errors.Is(err, ErrInvalid):
		// The message names the field and what is wrong with it.
		return &errcode.Error{Code: errcode.InvalidArgument, Msg: err.Error(), Err: err}
	}
	return err
}
