"""gpuplatform as the controller of its Kueue AdmissionCheck (docs/kueue.md, "The admission check")."""
