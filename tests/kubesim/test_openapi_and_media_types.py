"""/openapi/v2 and /openapi/v3, and the media types kubesim reads and writes.

The OpenAPI endpoints are those of https://kubernetes.io/docs/concepts/overview/kubernetes-api/#openapi-interface-definition:
/openapi/v3 lists each group-version's document by `serverRelativeURL` with a hash, and each document
holds `components.schemas` and `paths`. A media type the server cannot produce is 406 NotAcceptable, a
body it cannot decode 415 UnsupportedMediaType (apiserver's negotiation, k8s.io/apiserver/pkg/endpoints
/handlers/negotiation).
"""

from __future__ import annotations

import json

import urllib3


def _http(sim, method: str, path: str, *, body: bytes = b"", headers: dict[str, str] | None = None):
    pool = urllib3.PoolManager(ca_cert_data=sim.ca_pem)
    all_headers = {"Authorization": f"Bearer {sim.token}", **(headers or {})}
    return pool.request(method, sim.url + path, body=body or None, headers=all_headers)


def _proto_string(number: int, text: bytes) -> bytes:
    return bytes([number << 3 | 2, len(text)]) + text


def test_openapi_v3_indexes_a_document_per_group_version(kubesim):
    index = json.loads(_http(kubesim, "GET", "/openapi/v3").data)
    url = index["paths"]["api/v1"]["serverRelativeURL"]
    document = json.loads(_http(kubesim, "GET", url).data)

    assert url.startswith("/openapi/v3/api/v1?hash=")
    assert {"apis/resource.k8s.io/v1", "apis/resource.k8s.io/v1beta1"} <= set(index["paths"])
    assert document["openapi"].startswith("3.")
    node = document["components"]["schemas"]["io.k8s.api.core.v1.Node"]
    assert node["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Node", "version": "v1"}]
    assert node["properties"]["spec"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.api.core.v1.NodeSpec"}
    ]
    patch = document["paths"]["/api/v1/nodes/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]


def test_openapi_v2_is_json_and_protobuf_alone_is_not_acceptable(kubesim):
    document = json.loads(_http(kubesim, "GET", "/openapi/v2", headers={"Accept": "application/json"}).data)
    protobuf = _http(
        kubesim,
        "GET",
        "/openapi/v2",
        headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"},
    )

    assert document["swagger"] == "2.0"
    quantity = document["definitions"]["io.k8s.apimachinery.pkg.api.resource.Quantity"]
    assert quantity["type"] == "string"
    assert (
        document["definitions"]["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"]
        == "int-or-string"
    )
    assert protobuf.status == 406 and json.loads(protobuf.data)["reason"] == "NotAcceptable"


def test_a_protobuf_create_body_is_415(kubesim):
    answer = _http(
        kubesim,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        body=b"k8s\x00\x0a\x00",
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )

    assert answer.status == 415 and json.loads(answer.data)["reason"] == "UnsupportedMediaType"


def test_a_protobuf_delete_options_body_is_read(kubesim):
    """kubectl's clientset sends DeleteOptions as protobuf (runtime.Unknown around the message)."""
    kubesim.store.create(
        "configmaps",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "namespace": "default"}},
    )
    type_meta = _proto_string(1, b"v1") + _proto_string(2, b"DeleteOptions")
    options = _proto_string(5, b"All")  # dryRun: ["All"]
    body = b"k8s\x00" + _proto_string(1, type_meta) + _proto_string(2, options)

    answer = _http(
        kubesim,
        "DELETE",
        "/api/v1/namespaces/default/configmaps/kept",
        body=body,
        headers={"Content-Type": "application/vnd.kubernetes.protobuf"},
    )

    assert answer.status == 200
    assert kubesim.store.get("configmaps", "default", "kept") is not None


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def test_tables_partial_metadata_and_yaml_are_served_as_asked(kubesim):
    kubesim.store.create(
        "configmaps",
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "c", "namespace": "default"},
            "data": {"a": "1"},
        },
    )
    path = "/api/v1/namespaces/default/configmaps"

    table = json.loads(_http(kubesim, "GET", path, headers={"Accept": f"{TABLE},application/json"}).data)
    partial = json.loads(
        _http(
            kubesim,
            "GET",
            path,
            headers={"Accept": "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"},
        ).data
    )
    one = json.loads(
        _http(
            kubesim,
            "GET",
            path + "/c",
            headers={"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
        ).data
    )
    as_yaml = _http(kubesim, "GET", path + "/c", headers={"Accept": "application/yaml"})

    assert table["kind"] == "Table" and [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Created At",
    ]
    assert (
        table["rows"][0]["cells"][0] == "c" and table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    )
    assert partial["kind"] == "PartialObjectMetadataList" and "data" not in partial["items"][0]
    assert one["kind"] == "PartialObjectMetadata" and one["metadata"]["name"] == "c"
    assert as_yaml.headers["Content-Type"] == "application/yaml" and b"a: '1'" in as_yaml.data


def test_a_read_asking_only_for_what_is_not_served_is_406(kubesim):
    """Protobuf-only reads, and a PartialObjectMetadata of a list, are refused NotAcceptable."""
    path = "/api/v1/namespaces/default/configmaps"

    protobuf = _http(kubesim, "GET", path, headers={"Accept": "application/vnd.kubernetes.protobuf"})
    wrong = _http(
        kubesim,
        "GET",
        path,
        headers={"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"},
    )
    fallback = _http(
        kubesim, "GET", path, headers={"Accept": "application/vnd.kubernetes.protobuf,application/json"}
    )

    assert protobuf.status == 406 and json.loads(protobuf.data)["reason"] == "NotAcceptable"
    assert wrong.status == 406
    assert fallback.status == 200 and json.loads(fallback.data)["kind"] == "ConfigMapList"
