package awssso

import "github.com/myelin-run/myelin/provider/bedrock/internal/awscall"

// Client is how to reach one service, SSO (portal.sso) or SSO-OIDC
// (oidc): its endpoint (https://portal.sso.REGION.amazonaws.com,
// https://oidc.REGION.amazonaws.com or a configured one), its HTTP
// client and its retry policy, as awscall sends every AWS call. The chain
// fills it; it holds no credentials.
type Client = awscall.Client
