"""What gpudra is measured against through the API server, for benchmarks/admission.py (issue 41): the
MutatingAdmissionPolicy peer (`map`: its manifests in mutatingadmissionpolicy.yaml, read by `admission_policy`) and
kube-apiserver's own record of what a webhook cost it (`apiserver_metrics`)."""
