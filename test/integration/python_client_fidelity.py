#!/usr/bin/python3
"""The sandbox held to kube-apiserver v1.32 through the official Kubernetes Python client.

Run by python_client_fidelity.sh (which starts the sandbox and creates the CRDs):
    /usr/bin/python3 python_client_fidelity.py KUBECONFIG SUMMARY_FILE

Each check is a small function that returns (pass) or raises (fail). The expected answers are the
ones kube-apiserver 1.32 gives, read from its sources: the status code, the reason and, for 422s,
the whole message. A check named in KNOWN_DIVERGENCES that fails is reported as a known
divergence; one that passes is a failure, so that the set is kept honest.
Writes "PASSED FAILED KNOWN" to SUMMARY_FILE.
"""
import copy
import json
import sys
import traceback

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

NS = "fidelity"
T = 30  # client-side timeout of every request, seconds; never reached when the server answers

# Checks the sandbox does not pass yet, each with the answer it gives instead.
KNOWN_DIVERGENCES: set = set()

KUEUE = "kueue.x-k8s.io"
NOT_CHECKED = ('<nil>: Invalid value: "null": some validation rules were not checked because the '
               'object was invalid; correct the existing errors to complete validation')
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class Failure(Exception):
    pass


def invalid(kind, name, errs):
    """The message of errors.NewInvalid: one error alone, several in brackets."""
    body = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
    return '%s "%s" is invalid: %s' % (kind, name, body)


def api_error(fn, *args, **kwargs):
    """Calls fn, which must fail; returns (HTTP status, decoded Status body)."""
    try:
        fn(*args, _request_timeout=T, **kwargs)
    except ApiException as e:
        try:
            body = json.loads(e.body) if e.body else {}
        except ValueError:
            body = {"unparsed body": e.body if isinstance(e.body, str) else repr(e.body)}
        return e.status, body
    raise Failure("the request succeeded; expected it to be refused")


def expect_status(got_status, body, code, reason, message=None, prefix=None, contains=None):
    got = "%s %s %r" % (got_status, body.get("reason"), body.get("message"))
    want = "%s %s" % (code, reason)
    ok = got_status == code and body.get("reason") == reason
    if message is not None:
        want += " %r" % message
        ok = ok and body.get("message") == message
    if prefix is not None:
        want += " message starting %r" % prefix
        ok = ok and str(body.get("message", "")).startswith(prefix)
    if contains is not None:
        want += " message containing %r" % contains
        ok = ok and contains in str(body.get("message", ""))
    if not ok:
        raise Failure("expected %s\n     got      %s" % (want, got))


def expect_error(code, reason, fn, *args, message=None, prefix=None, contains=None, **kwargs):
    status, body = api_error(fn, *args, **kwargs)
    expect_status(status, body, code, reason, message, prefix, contains)


def raw(method, path, body=None, ctype="application/json", query=None):
    """A request the typed client would not send as is: returns (status, decoded body, headers)."""
    try:
        resp, status, headers = API.call_api(
            path, method, query_params=query or [], body=body,
            header_params={"Content-Type": ctype, "Accept": "application/json"},
            auth_settings=["BearerToken"], _preload_content=False, _return_http_data_only=False,
            _request_timeout=T)
        data = resp.data
    except ApiException as e:
        status, data, headers = e.status, e.body, e.headers
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    try:
        decoded = json.loads(data) if data else {}
    except ValueError:
        decoded = {"unparsed body": data}
    return status, decoded, headers


def check(cond, what):
    if not cond:
        raise Failure(what)


# ---------------------------------------------------------------------------------------------
# 1. CRD validation: invalid Kueue objects refused with kube's 422, their valid twins accepted.

CONTAINERS = {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}


def podset(name="main", count=2, **extra):
    return dict({"name": name, "count": count, "template": copy.deepcopy(CONTAINERS)}, **extra)


def workload(version, name, **spec):
    return {"apiVersion": "%s/%s" % (KUEUE, version), "kind": "Workload",
            "metadata": {"name": name, "namespace": NS},
            "spec": dict({"queueName": "user-queue", "podSets": [podset()]}, **spec)}


def cluster_queue(name, cohort=None, strategy="BestEffortFIFO"):
    spec = {"namespaceSelector": {}, "queueingStrategy": strategy,
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
                {"name": "default", "resources": [
                    {"name": "cpu", "nominalQuota": "10", "borrowingLimit": "5"}]}]}]}
    if cohort:
        spec["cohortName"] = cohort
    return {"apiVersion": KUEUE + "/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": spec}


def with_count_type(o):
    o["spec"]["podSets"][0]["count"] = "two"


def without_podsets(o):
    del o["spec"]["podSets"]


def many_podsets(n):
    def f(o):
        o["spec"]["podSets"] = [podset("ps%d" % i) for i in range(n)]
    return f


# name -> (plural, version, object name, make the base object, make it invalid, make it valid,
#          kind, expected errors)
CRD_CASES = {
    "crd_wrong_type": (
        "workloads", "v1beta1", "wl-type", lambda n: workload("v1beta1", n),
        with_count_type, lambda o: None, "Workload.kueue.x-k8s.io",
        ['spec.podSets[0].count: Invalid value: "string": spec.podSets[0].count in body must be '
         'of type integer: "string"', NOT_CHECKED]),
    "crd_missing_required": (
        "workloads", "v1beta1", "wl-required", lambda n: workload("v1beta1", n),
        without_podsets, lambda o: None, "Workload.kueue.x-k8s.io",
        ["spec.podSets: Required value", NOT_CHECKED]),
    "crd_enum": (
        "workloads", "v1beta1", "wl-enum", lambda n: workload("v1beta1", n),
        lambda o: o["spec"].update(priorityClassSource="bogus"),
        lambda o: o["spec"].update(priorityClassSource="kueue.x-k8s.io/workloadpriorityclass"),
        "Workload.kueue.x-k8s.io",
        ['spec.priorityClassSource: Unsupported value: "bogus": supported values: '
         '"kueue.x-k8s.io/workloadpriorityclass", "scheduling.k8s.io/priorityclass", ""',
         NOT_CHECKED]),
    "crd_pattern": (
        "workloads", "v1beta2", "wl-pattern", lambda n: workload("v1beta2", n),
        lambda o: o["spec"].update(queueName="Bad_Queue"),
        lambda o: o["spec"].update(queueName="good-queue"), "Workload.kueue.x-k8s.io",
        ['spec.queueName: Invalid value: "Bad_Queue": spec.queueName in body should match '
         "'%s'" % DNS_SUBDOMAIN]),
    "crd_minimum": (
        "workloads", "v1beta2", "wl-minimum", lambda n: workload("v1beta2", n),
        lambda o: o["spec"].update(maximumExecutionTimeSeconds=0),
        lambda o: o["spec"].update(maximumExecutionTimeSeconds=60), "Workload.kueue.x-k8s.io",
        ["spec.maximumExecutionTimeSeconds: Invalid value: 0: spec.maximumExecutionTimeSeconds "
         "in body should be greater than or equal to 1"]),
    "crd_max_items": (
        "workloads", "v1beta1", "wl-maxitems", lambda n: workload("v1beta1", n),
        many_podsets(19), many_podsets(18), "Workload.kueue.x-k8s.io",
        ["spec.podSets: Too many: 19: must have at most 18 items", NOT_CHECKED]),
    "crd_duplicate_list_map_key": (
        "workloads", "v1beta2", "wl-dupkey", lambda n: workload("v1beta2", n),
        lambda o: o["spec"]["podSets"].append(podset("main")),
        lambda o: o["spec"]["podSets"].append(podset("aux")), "Workload.kueue.x-k8s.io",
        ['spec.podSets[1]: Duplicate value: map[string]interface {}{"name":"main"}']),
    "crd_cel_priority_class": (
        "workloads", "v1beta1", "wl-cel-priority",
        lambda n: workload("v1beta1", n, priorityClassName="high"),
        lambda o: None, lambda o: o["spec"].update(priority=100), "Workload.kueue.x-k8s.io",
        ['spec: Invalid value: "object": priority should not be nil when priorityClassName is set']),
    "crd_cel_min_count": (
        "workloads", "v1beta2", "wl-cel-mincount", lambda n: workload("v1beta2", n),
        lambda o: o["spec"]["podSets"][0].update(minCount=3),
        lambda o: o["spec"]["podSets"][0].update(minCount=1), "Workload.kueue.x-k8s.io",
        ['spec.podSets[0]: Invalid value: "object": minCount should be positive and less or '
         'equal to count']),
    "crd_clusterqueue_enum": (
        "clusterqueues", "v1beta2", "cq-enum", lambda n: cluster_queue(n, cohort="team"),
        lambda o: o["spec"].update(queueingStrategy="LIFO"), lambda o: None,
        "ClusterQueue.kueue.x-k8s.io",
        ['spec.queueingStrategy: Unsupported value: "LIFO": supported values: "StrictFIFO", '
         '"BestEffortFIFO"', NOT_CHECKED]),
    "crd_clusterqueue_cel": (
        "clusterqueues", "v1beta2", "cq-cel", lambda n: cluster_queue(n),
        lambda o: None, lambda o: o["spec"].update(cohortName="team"),
        "ClusterQueue.kueue.x-k8s.io",
        ['spec: Invalid value: "object": borrowingLimit must be nil when cohort is empty']),
}


def create_cr(plural, version, obj, _request_timeout=T):
    if plural == "clusterqueues":
        return CO.create_cluster_custom_object_with_http_info(
            KUEUE, version, plural, obj, _request_timeout=_request_timeout)
    return CO.create_namespaced_custom_object_with_http_info(
        KUEUE, version, NS, plural, obj, _request_timeout=_request_timeout)


def crd_case(name):
    plural, version, obj_name, base, spoil, _, kind, errs = CRD_CASES[name]
    obj = base(obj_name)
    spoil(obj)
    expect_error(422, "Invalid", create_cr, plural, version, obj, message=invalid(kind, obj_name, errs))


def status_condition(reason=True):
    c = {"type": "Finished", "status": "True", "message": "",
         "lastTransitionTime": "2026-01-01T00:00:00Z"}
    if reason:
        c["reason"] = "Succeeded"
    return c


def put_workload_status(name, status):
    obj = CO.get_namespaced_custom_object(KUEUE, "v1beta2", NS, "workloads", name, _request_timeout=T)
    obj["status"] = status
    return CO.replace_namespaced_custom_object_status_with_http_info(
        KUEUE, "v1beta2", NS, "workloads", name, obj, _request_timeout=T)


def crd_status_reason_required():
    name = "wl-status-reason"
    create_cr("workloads", "v1beta2", workload("v1beta2", name))
    obj = CO.get_namespaced_custom_object(KUEUE, "v1beta2", NS, "workloads", name, _request_timeout=T)
    obj["status"] = {"conditions": [status_condition(reason=False)]}
    expect_error(422, "Invalid", CO.replace_namespaced_custom_object_status,
                 KUEUE, "v1beta2", NS, "workloads", name, obj,
                 message=invalid("Workload.kueue.x-k8s.io", name,
                                 ["status.conditions[0].reason: Required value", NOT_CHECKED]))


def crd_status_cluster_name_immutable():
    name = "wl-cluster-name"
    create_cr("workloads", "v1beta2", workload("v1beta2", name))
    _, code, _ = put_workload_status(name, {"clusterName": "worker1"})
    check(code == 200, "setting status.clusterName the first time answered %s, not 200" % code)
    obj = CO.get_namespaced_custom_object(KUEUE, "v1beta2", NS, "workloads", name, _request_timeout=T)
    check(obj.get("status", {}).get("clusterName") == "worker1",
          "status.clusterName was not stored: %r" % obj.get("status"))
    obj["status"]["clusterName"] = "worker2"
    expect_error(422, "Invalid", CO.replace_namespaced_custom_object_status,
                 KUEUE, "v1beta2", NS, "workloads", name, obj,
                 message=invalid("Workload.kueue.x-k8s.io", name,
                                 ['status: Invalid value: "object": clusterName is immutable once set']))


def crd_valid_twins_accepted():
    """The objects of the checks above, made valid, are created (201), their status written (200)."""
    problems = []
    for case, (plural, version, obj_name, base, _, fix, _, _) in CRD_CASES.items():
        obj = base(obj_name + "-ok")
        fix(obj)
        try:
            _, code, _ = create_cr(plural, version, obj)
            if code != 201:
                problems.append("%s: answered %s, not 201" % (case, code))
        except ApiException as e:
            problems.append("%s: refused with %s %s" % (case, e.status, e.body))
    for name, status in (("wl-status-reason-ok", {"conditions": [status_condition()]}),
                         ("wl-cluster-name-ok", {"clusterName": "worker1"})):
        try:
            create_cr("workloads", "v1beta2", workload("v1beta2", name))
            _, code, _ = put_workload_status(name, status)
            if code != 200:
                problems.append("%s status: answered %s, not 200" % (name, code))
            # Writing the same clusterName again is no change, so no violation.
            _, code, _ = put_workload_status(name, status)
            if code != 200:
                problems.append("%s status again: answered %s, not 200" % (name, code))
        except ApiException as e:
            problems.append("%s: refused with %s %s" % (name, e.status, e.body))
    check(not problems, "\n     ".join(problems))


# ---------------------------------------------------------------------------------------------
# 2. Built-in kinds are decoded into their Go types.

CM_PATH = "/api/v1/namespaces/%s/configmaps" % NS


def builtin_configmap_data_array_400():
    status, body, _ = raw("POST", CM_PATH, {"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": "cm-data-array"}, "data": [1]})
    # kube-apiserver 1.32 (transformDecodeError + sigs.k8s.io/json): 'ConfigMap in version "v1"
    # cannot be handled as a ConfigMap: json: cannot unmarshal array into Go struct field
    # ConfigMap.data of type map[string]string'
    expect_status(status, body, 400, "BadRequest",
                  prefix='ConfigMap in version "v1" cannot be handled as a ConfigMap: ',
                  contains="cannot unmarshal array")


def builtin_secret_bad_base64_400():
    status, body, _ = raw("POST", "/api/v1/namespaces/%s/secrets" % NS,
                          {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "secret-b64"},
                           "data": {"k": "not base64!"}})
    expect_status(status, body, 400, "BadRequest",
                  message='Secret in version "v1" cannot be handled as a Secret: illegal base64 '
                          'data at input byte 3')


def unknown_field_create():
    if "unknown" not in STATE:
        STATE["unknown"] = raw("POST", CM_PATH, {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-unknown-field"},
            "data": {"k": "v"}, "bogus": "x"})
    return STATE["unknown"]


def builtin_unknown_field_dropped():
    status, body, _ = unknown_field_create()
    check(status == 201, "create answered %s %s, not 201" % (status, body))
    check("bogus" not in body and body.get("data") == {"k": "v"},
          "the answer keeps the unknown field or loses data: %s" % body)
    got = V1.api_client.sanitize_for_serialization(
        V1.read_namespaced_config_map("cm-unknown-field", NS, _request_timeout=T))
    status, body, _ = raw("GET", CM_PATH + "/cm-unknown-field")
    check(status == 200 and "bogus" not in body, "a later GET shows the unknown field: %s" % body)
    check(got.get("data") == {"k": "v"}, "typed GET: %s" % got)


def builtin_unknown_field_warning():
    # fieldValidation defaults to Warn: the field is dropped with a warning header.
    status, _, headers = unknown_field_create()
    warning = (headers or {}).get("Warning")
    check(status == 201 and warning == '299 - "unknown field \\"bogus\\""',
          'expected the header Warning: 299 - "unknown field \\"bogus\\""; got %r' % warning)


# ---------------------------------------------------------------------------------------------
# 3. A custom resource without a status subresource: any non-metadata change bumps generation.

def cr_no_status_subresource_generation():
    wf = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Workflow",
          "metadata": {"name": "wf-generation", "namespace": NS},
          "spec": {"entrypoint": "main",
                   "templates": [{"name": "main", "container": {"image": "busybox"}}]}}
    created = CO.create_namespaced_custom_object("argoproj.io", "v1alpha1", NS, "workflows", wf,
                                                 _request_timeout=T)
    check(created["metadata"].get("generation") == 1, "created with generation %r"
          % created["metadata"].get("generation"))
    created["status"] = {"phase": "Running"}
    updated = CO.replace_namespaced_custom_object("argoproj.io", "v1alpha1", NS, "workflows",
                                                  "wf-generation", created, _request_timeout=T)
    check(updated.get("status") == {"phase": "Running"}, "status not stored: %r" % updated.get("status"))
    check(updated["metadata"].get("generation") == 2,
          "a status-only change left generation at %r, kube bumps it to 2"
          % updated["metadata"].get("generation"))


# ---------------------------------------------------------------------------------------------
# 4. Old resource versions, preconditions, metadata validation.

def history():
    """cm-history created, then modified 120 times: the resource versions of every state."""
    if "history" not in STATE:
        cm = V1.create_namespaced_config_map(NS, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="cm-history"), data={"i": "0"}), _request_timeout=T)
        rvs = [cm.metadata.resource_version]
        for i in range(1, 121):
            cm = V1.patch_namespaced_config_map("cm-history", NS, {"data": {"i": str(i)}},
                                                _request_timeout=T)
            rvs.append(cm.metadata.resource_version)
        STATE["history"] = rvs
    return STATE["history"]


def rv_list_exact_old_rv():
    rvs = history()
    rv119 = rvs[119]  # after the 119th modification, inside a 50-event window
    got = V1.list_namespaced_config_map(NS, resource_version=rv119, resource_version_match="Exact",
                                        field_selector="metadata.name=cm-history", _request_timeout=T)
    check(got.metadata.resource_version == rv119,
          "the list is at resourceVersion %s, not the requested %s"
          % (got.metadata.resource_version, rv119))
    check(len(got.items) == 1, "%d items" % len(got.items))
    item = got.items[0]
    check(item.data == {"i": "119"} and item.metadata.resource_version == rv119,
          "the object as of %s should have data {'i': '119'}; got data %s at resourceVersion %s"
          % (rv119, item.data, item.metadata.resource_version))


def rv_watch_expired_410():
    # kube answers a watch from a resourceVersion older than its watch cache window with an ERROR
    # event {code: 410, reason: Expired, message: "too old resource version: X (Y)"}. The
    # sandbox's window is --watch-history 50 events; kube's is the watch cache (at least 100
    # events, grown while they are younger than 75 s), so the same 121 quick writes would still be
    # inside kube's window: what is checked is the answer for an RV outside the window.
    rv0 = history()[0]
    w = watch.Watch()
    try:
        for event in w.stream(V1.list_namespaced_config_map, NS, resource_version=rv0,
                              timeout_seconds=3, _request_timeout=T):
            if event["type"] == "ERROR":
                obj = event["raw_object"]
                check(obj.get("code") == 410 and obj.get("reason") in ("Expired", "Gone"),
                      "ERROR event %s" % obj)
                return
            raise Failure("a watch from resourceVersion %s (120 writes ago) replayed a %s event "
                          "(resourceVersion %s); expected an ERROR event 410 Expired"
                          % (rv0, event["type"], event["raw_object"]["metadata"].get("resourceVersion")))
    except ApiException as e:
        reason = str(e.reason)
        if e.status == 410 and (reason.startswith("Expired") or reason.startswith("Gone")):
            return
        raise Failure("expected 410 Expired; got %s %s %s" % (e.status, e.reason, e.body))
    finally:
        w.stop()
    raise Failure("the watch from resourceVersion %s ended without any event; expected an ERROR "
                  "event 410 Expired" % rv0)


def rv_put_foreign_uid_409():
    name = "cm-uid"
    V1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name), data={"k": "v"}), _request_timeout=T)
    cm = V1.read_namespaced_config_map(name, NS, _request_timeout=T)
    stored, sent = cm.metadata.uid, "00000000-0000-0000-0000-000000000001"
    cm.metadata.uid = sent
    # The registry passes the body's uid as a storage precondition; etcd3's Preconditions.Check
    # returns a StorageError (InvalidObj) that InterpretUpdateError turns into a 409.
    expect_error(409, "Conflict", V1.replace_namespaced_config_map, name, NS, cm,
                 message='Operation cannot be fulfilled on configmaps "%s": StorageError: invalid '
                         'object, Code: 4, Key: /registry/configmaps/%s/%s, ResourceVersion: 0, '
                         'AdditionalErrorMsg: Precondition failed: UID in precondition: %s, UID in '
                         'object meta: %s' % (name, NS, name, sent, stored))


def rv_merge_patch_rename_400():
    name = "cm-rename"
    V1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name)), _request_timeout=T)
    status, body, _ = raw("PATCH", CM_PATH + "/" + name, {"metadata": {"name": "cm-renamed"}},
                          ctype="application/merge-patch+json")
    expect_status(status, body, 400, "BadRequest",
                  message="the name of the object (cm-renamed) does not match the name on the URL "
                          "(%s)" % name)


def meta_finalizer_invalid_422():
    name = "cm-finalizer"
    # apimachinery's ValidateFinalizers reports IsQualifiedName on the list's path (no index);
    # core's ValidateObjectMeta adds the non-qualified finalizer error on the indexed path.
    expect_error(422, "Invalid", V1.create_namespaced_config_map, NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, finalizers=["bad finalizer!"])),
        message=invalid("ConfigMap", name, [
            'metadata.finalizers: Invalid value: "bad finalizer!": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
            "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            'metadata.finalizers[0]: Invalid value: "bad finalizer!": name is neither a standard '
            "finalizer name nor is it fully qualified"]))


def meta_configmap_key_invalid_422():
    name = "cm-bad-key"
    expect_error(422, "Invalid", V1.create_namespaced_config_map, NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name), data={"bad key": "v"}),
        message=invalid("ConfigMap", name, [
            'data[bad key]: Invalid value: "bad key": a valid config key must consist of '
            "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or "
            "'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"]))


def meta_generate_name_truncated():
    prefix = "fidelity-" + "g" * 61  # 70 characters
    cm = V1.create_namespaced_config_map(NS, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(generate_name=prefix)), _request_timeout=T)
    name = cm.metadata.name
    # names.SimpleNameGenerator: the base cut to 63-5 = 58 characters, then 5 random ones.
    check(len(name) == 63 and name.startswith(prefix[:58]) and name[58:].isalnum(),
          "generated name %r (%d characters); expected the prefix cut to 58 characters plus 5 "
          "random ones" % (name, len(name)))


# ---------------------------------------------------------------------------------------------
# 5. Behaviour the client relies on.

def secret_string_data_merged():
    s = V1.create_namespaced_secret(NS, client.V1Secret(
        metadata=client.V1ObjectMeta(name="secret-string-data"), string_data={"a": "b"}),
        _request_timeout=T)
    check(s.data == {"a": "Yg=="} and s.string_data is None,
          "create answered data=%r stringData=%r" % (s.data, s.string_data))
    status, body, _ = raw("GET", "/api/v1/namespaces/%s/secrets/secret-string-data" % NS)
    check(status == 200 and body.get("data") == {"a": "Yg=="} and "stringData" not in body,
          "GET answered %s %s" % (status, body))


def delete_collection_label_selector():
    for name, team in (("cm-dc-a", "blue"), ("cm-dc-b", "blue"), ("cm-dc-c", "red")):
        V1.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(
            name=name, labels={"fidelity-dc": team})), _request_timeout=T)
    try:
        V1.delete_collection_namespaced_config_map(NS, label_selector="fidelity-dc=blue",
                                                   _request_timeout=T)
    except ApiException as e:
        raise Failure("deletecollection answered %s %s" % (e.status, e.body))
    left = V1.list_namespaced_config_map(NS, label_selector="fidelity-dc", _request_timeout=T)
    names = sorted(i.metadata.name for i in left.items)
    check(names == ["cm-dc-c"], "left after deleting team=blue: %s" % names)


def watch_bookmark():
    # Raw list and a label selector: the checks above may have left objects the typed client
    # cannot decode (a sandbox that stored data: [1]).
    selector = "fidelity-bookmark=yes"
    V1.create_namespaced_config_map(NS, client.V1ConfigMap(metadata=client.V1ObjectMeta(
        name="cm-bookmark", labels={"fidelity-bookmark": "yes"})), _request_timeout=T)
    status, body, _ = raw("GET", CM_PATH, query=[("labelSelector", selector)])
    check(status == 200, "list answered %s %s" % (status, body))
    rv = body.get("metadata", {}).get("resourceVersion")
    w = watch.Watch()
    seen = []
    try:
        for event in w.stream(V1.list_namespaced_config_map, NS, resource_version=rv,
                              label_selector=selector, allow_watch_bookmarks=True,
                              timeout_seconds=5, _request_timeout=T):
            seen.append(event["type"])
            if event["type"] == "BOOKMARK":
                obj = event["raw_object"]
                check(obj.get("kind") == "ConfigMap" and obj.get("metadata", {}).get("resourceVersion"),
                      "a BOOKMARK without kind ConfigMap and a resourceVersion: %s" % obj)
                return
    finally:
        w.stop()
    raise Failure("the watch (allowWatchBookmarks, timeoutSeconds=5) ended with events %s and no "
                  "BOOKMARK" % seen)


def ssa_create_201_update_200():
    path = CM_PATH + "/cm-ssa"
    doc = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-ssa\n  namespace: %s\n"
           "data:\n  k: %s\n")
    query = [("fieldManager", "fidelity")]
    status, body, _ = raw("PATCH", path, doc % (NS, "one"), "application/apply-patch+yaml", query)
    check(status == 201 and body.get("data") == {"k": "one"},
          "the apply that creates answered %s %s; expected 201" % (status, body))
    status, body, _ = raw("PATCH", path, doc % (NS, "two"), "application/apply-patch+yaml", query)
    check(status == 200 and body.get("data") == {"k": "two"},
          "the apply that updates answered %s %s; expected 200" % (status, body))


CHECKS = [(name, (lambda n=name: crd_case(n))) for name in CRD_CASES] + [
    ("crd_status_reason_required", crd_status_reason_required),
    ("crd_status_cluster_name_immutable", crd_status_cluster_name_immutable),
    ("crd_valid_twins_accepted", crd_valid_twins_accepted),
    ("builtin_configmap_data_array_400", builtin_configmap_data_array_400),
    ("builtin_secret_bad_base64_400", builtin_secret_bad_base64_400),
    ("builtin_unknown_field_dropped", builtin_unknown_field_dropped),
    ("builtin_unknown_field_warning", builtin_unknown_field_warning),
    ("cr_no_status_subresource_generation", cr_no_status_subresource_generation),
    # The two reads of old resource versions come right after the 121 writes that history()
    # makes, before any other write could push them out of the sandbox's window.
    ("rv_list_exact_old_rv", rv_list_exact_old_rv),
    ("rv_watch_expired_410", rv_watch_expired_410),
    ("rv_put_foreign_uid_409", rv_put_foreign_uid_409),
    ("rv_merge_patch_rename_400", rv_merge_patch_rename_400),
    ("meta_finalizer_invalid_422", meta_finalizer_invalid_422),
    ("meta_configmap_key_invalid_422", meta_configmap_key_invalid_422),
    ("meta_generate_name_truncated", meta_generate_name_truncated),
    ("secret_string_data_merged", secret_string_data_merged),
    ("delete_collection_label_selector", delete_collection_label_selector),
    ("watch_bookmark", watch_bookmark),
    ("ssa_create_201_update_200", ssa_create_201_update_200),
]

STATE = {}


def main():
    global API, V1, CO
    kubeconfig, summary = sys.argv[1], sys.argv[2]
    config.load_kube_config(config_file=kubeconfig)
    API = client.ApiClient()
    V1 = client.CoreV1Api(API)
    CO = client.CustomObjectsApi(API)
    V1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NS)), _request_timeout=T)

    unknown = KNOWN_DIVERGENCES - {name for name, _ in CHECKS}
    passed = failed = known = 0
    if unknown:
        failed += 1
        print("FAIL KNOWN_DIVERGENCES names no such check: %s" % sorted(unknown))
    for name, fn in CHECKS:
        try:
            fn()
            error = None
        except Failure as e:
            error = str(e)
        except ApiException as e:
            error = "unexpected answer %s %s: %s" % (e.status, e.reason, e.body)
        except Exception:  # a bug in the check or a broken connection: report it, go on
            error = traceback.format_exc().rstrip().replace("\n", "\n     ")
        if name in KNOWN_DIVERGENCES:
            if error is None:
                failed += 1
                print("FAIL %s: fixed: remove it from KNOWN_DIVERGENCES" % name)
            else:
                known += 1
                print("KNOWN %s (known divergence): %s" % (name, error))
        elif error is None:
            passed += 1
            print("ok   %s" % name)
        else:
            failed += 1
            print("FAIL %s: %s" % (name, error))
    with open(summary, "w") as f:
        f.write("%d %d %d\n" % (passed, failed, known))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
