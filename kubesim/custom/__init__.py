"""CustomResourceDefinitions: what a CRD serves (`definitions`), and the apiextensions server's rules for
custom objects: structural schema validation, defaulting and pruning (`structural`), and the
`x-kubernetes-validations` CEL rules (`rules`)."""
