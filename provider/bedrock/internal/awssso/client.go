package awssso

import "github.com/myelin-run/myelin/provider/bedrock/internal/awscall"

// Client is how to reach one service, SSO (portal.sso) or SSO-OIDC
// (oidc): its endpoint (https://portal.sso.REGION.amazonaws.com,
// https://oidc.REGION.amazonaws.com or a configured one), its HTTP
// client and its retry policy, as awscall sends every AWS call. The chain
// fills it, with in Err why the endpoint could not be resolved (then
// only a call fails: an unexpired cached token needs none); it holds no
// credentials.
type Client = awscall.Client
