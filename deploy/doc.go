// Package deploy holds the offline checks of the deployment files in this
// folder (Dockerfile, compose, HAProxy, Kubernetes): its tests decode them
// strictly and compare them with the flags of the cdpguard binary. It is a
// module of its own so that cdpguard's module carries no Kubernetes
// dependencies.
package deploy
