"""The image on EKS: the manifests' renderer and validator, the node check, the launch recipe and the cluster's shape,
and the job submitter."""
