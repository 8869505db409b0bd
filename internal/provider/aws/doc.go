// Package aws is Millwright's AWS EC2 driver: each Machine is one EC2
// instance, found again by the tags it carries (never by its name), so a
// create repeated after a restart, a timeout or a retry returns the
// instance that exists instead of making a second one. cmd/millwright-aws
// serves it over gRPC. docs/providers/aws.md describes the providerSpec,
// the credentials, the tags, the IAM policy and the error table for users.
package aws
