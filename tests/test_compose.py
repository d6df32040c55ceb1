"""Static checks of the Docker Compose stacks in compose/.

No Docker engine runs where these tests run, so the stacks are checked by
construction. Every compose/*.yml must load as YAML, validate against the
Compose Specification JSON schema (../shared/schemas/compose-spec.json, beside
the repository; the schema test is skipped when that file is absent) and follow
the lab's conventions:

* a fixed project ``name:``;
* every service has a health check;
* every published port is bound to 127.0.0.1, and the host ports are the ones
  the lab URLs in compose/README.md use, distinct across stacks;
* images carry an exact tag (no ``latest``, no floating major/minor tag);
* no literal password in ``environment`` (only ``${VAR}``/``${VAR:-default}``
  references or empty values; a non-empty default must be documented in
  compose/README.md);
* data lives in named volumes, every service has a memory limit;
* for StarRocks and Doris the backend's HTTP port (the Stream Load redirect
  target) is the same number inside and outside the container.

Each convention is a function returning a list of problems. The positive tests
run them on the real files; the negative tests run them on broken in-memory
copies of the real files to show that each check can fail.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

import jsonschema
import pytest
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
COMPOSE_DIR = REPO_ROOT / "compose"
SCRIPTS_DIR = COMPOSE_DIR / "scripts"
README_PATH = COMPOSE_DIR / "README.md"
SCHEMA_PATH = REPO_ROOT.parent / "shared" / "schemas" / "compose-spec.json"

# The URL the lab's engine registry takes for each stack (compose/README.md
# must give exactly these).
LAB_URLS = {
    "starrocks-shared-nothing.yml": "starrocks://root@127.0.0.1:9030/ingestlab?http_port=8030",
    "starrocks-shared-data.yml": "starrocks://root@127.0.0.1:9130/ingestlab?http_port=8130",
    "doris.yml": "doris://root@127.0.0.1:9230/ingestlab?http_port=8230",
    "yugabytedb.yml": "yugabytedb://yugabyte@127.0.0.1:5433/yugabyte",
    "postgres.yml": "postgresql://postgres@127.0.0.1:5432/postgres",
    "mariadb.yml": "mariadb://root@127.0.0.1:3306/ingestlab",
    "arangodb.yml": "arangodb://root@127.0.0.1:8529/_system",
    "galera.yml": "galera://root@127.0.0.1:3316/ingestlab?nodes=127.0.0.1:3317,127.0.0.1:3318",
}

# Host port -> container port that each stack publishes, all on 127.0.0.1.
PUBLISHED = {
    "starrocks-shared-nothing.yml": {9030: 9030, 8030: 8030, 8040: 8040},
    "starrocks-shared-data.yml": {9130: 9030, 8130: 8030, 8140: 8140},
    "doris.yml": {9230: 9030, 8230: 8030, 8240: 8240},
    "yugabytedb.yml": {5433: 5433},
    "postgres.yml": {5432: 5432},
    "mariadb.yml": {3306: 3306},
    "arangodb.yml": {8529: 8529},
    "galera.yml": {3316: 3306, 3317: 3306, 3318: 3306},
}

# Override files (``docker compose -f <base> -f <override>``): override -> base stack.
# They are checked against the schema alone and, merged into their base, by every convention.
OVERRIDES = {"yugabytedb-cloud-375.yml": "yugabytedb.yml"}

# The ArangoDB seed's machine: a 4 GB VM on a cloud volume of 375 read / 750 write IOPS and
# 60 MB/s, and its start options (seed arangodb-upsert-beyond-ram.ru.txt). Stack -> service.
SEED_DISK = {"device_read_iops": 375, "device_write_iops": 750, "device_read_bps": "60mb", "device_write_bps": "60mb"}
SEED_OPTIONS = ("--cache.size=256000000", "--query.memory-limit=100000000", "--rocksdb.block-cache-size=256000000",
                "--rocksdb.enforce-block-cache-size-limit=true", "--rocksdb.total-write-buffer-size=100000000")
SEED_MACHINES = {"arangodb.yml": "arangodb", "yugabytedb-cloud-375.yml": "yugabytedb"}

# Stream Load redirect target of the StarRocks/Doris stacks: the backend
# service, the environment variable its start script turns into be_http_port /
# webserver_port, and the port (published with host port == container port).
REDIRECT_BACKENDS = {
    "starrocks-shared-nothing.yml": ("be", "SR_HTTP_PORT", 8040),
    "starrocks-shared-data.yml": ("cn", "SR_HTTP_PORT", 8140),
    "doris.yml": ("be", "DORIS_BE_HTTP_PORT", 8240),
}

STACK_FILES = sorted(LAB_URLS)
# What is really in compose/: the generic checks run on every file found, so a
# new stack is checked before anyone adds it to the tables above.
COMPOSE_FILES = sorted(p.name for p in COMPOSE_DIR.glob("*.yml") if p.name not in OVERRIDES)

Problems = list[str]


# --------------------------------------------------------------- helpers ---


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((COMPOSE_DIR / name).read_text(encoding="utf-8"))


def merge(base: Any, override: Any) -> Any:
    """``override`` merged into ``base`` as Compose merges files: mappings key by key, the rest replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for key, value in override.items():
            out[key] = merge(base.get(key), value) if key in base else value
        return out
    return copy.deepcopy(override)


def load_merged(name: str) -> dict[str, Any]:
    """A stack as Compose runs it: an override file merged into its base, or the file itself."""
    return merge(load(OVERRIDES[name]), load(name)) if name in OVERRIDES else load(name)


def readme_text() -> str:
    return README_PATH.read_text(encoding="utf-8")


def services(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return doc.get("services") or {}


_VAR = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?+])?(?P<arg>[^}]*)\}")


def resolve_defaults(value: str) -> str | None:
    """Interpolate ``${VAR:-default}``/``${VAR-default}`` with their defaults.

    The environment is ignored on purpose: the check is about what the file
    pins. Returns None when a variable has no default (``${VAR}``,
    ``${VAR:?err}``), i.e. when the file pins nothing.
    """
    unresolved = False

    def repl(m: re.Match[str]) -> str:
        nonlocal unresolved
        if m.group("op") in (":-", "-"):
            return m.group("arg")
        unresolved = True
        return ""

    out = _VAR.sub(repl, value.replace("$$", "\0")).replace("\0", "$")
    return None if unresolved else out


def env_items(service: dict[str, Any]) -> list[tuple[str, Any]]:
    env = service.get("environment") or {}
    if isinstance(env, dict):
        return list(env.items())
    items = []
    for entry in env:
        key, sep, value = str(entry).partition("=")
        items.append((key, value if sep else None))
    return items


def parse_port(spec: Any) -> tuple[str | None, int | None, int | None]:
    """(host_ip, host_port, container_port) of one ``ports`` entry."""
    if isinstance(spec, dict):
        published = spec.get("published")
        target = spec.get("target")
        try:
            host_port = int(published) if published is not None else None
        except ValueError:
            host_port = None
        try:
            container_port = int(target) if target is not None else None
        except ValueError:
            container_port = None
        return spec.get("host_ip"), host_port, container_port
    text = str(spec).split("/", 1)[0]
    host_ip = None
    if text.startswith("["):  # [ipv6]:host:container
        host_ip, _, text = text[1:].partition("]:")
    parts = text.split(":")
    if len(parts) == 3:
        host_ip, host, container = parts
    elif len(parts) == 2:
        host, container = parts
    else:
        host, container = "", parts[0]
    try:
        host_port = int(host) if host else None
    except ValueError:
        host_port = None
    try:
        container_port = int(container)
    except ValueError:
        container_port = None
    return host_ip or None, host_port, container_port


def published_ports(doc: dict[str, Any]) -> list[tuple[str, str | None, int | None, int | None]]:
    out = []
    for name, svc in services(doc).items():
        for spec in svc.get("ports") or []:
            out.append((name, *parse_port(spec)))
    return out


def as_strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return [str(value)]


# ---------------------------------------------------------------- checks ---


def check_schema(doc: dict[str, Any], schema: dict[str, Any]) -> Problems:
    validator = jsonschema.Draft7Validator(schema)
    return [
        f"{'/'.join(map(str, e.absolute_path)) or '<root>'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))
    ]


PROJECT_NAME = re.compile(r"^ingestlab-[a-z0-9][a-z0-9_-]*$")


def check_project_name(doc: dict[str, Any]) -> Problems:
    name = doc.get("name")
    if not isinstance(name, str):
        return ["no fixed project name (top-level `name:`)"]
    if not PROJECT_NAME.match(name):
        return [f"project name {name!r} is not a valid Compose project name starting with 'ingestlab-'"]
    return []


def check_healthchecks(doc: dict[str, Any]) -> Problems:
    problems = []
    if not services(doc):
        problems.append("no services")
    for name, svc in services(doc).items():
        hc = svc.get("healthcheck")
        if not isinstance(hc, dict):
            problems.append(f"{name}: no healthcheck")
            continue
        if hc.get("disable") in (True, "true"):
            problems.append(f"{name}: healthcheck disabled")
        test = as_strings(hc.get("test"))
        command = test[1:] if test and test[0] in ("CMD", "CMD-SHELL") else test
        if not test or test[0] == "NONE" or not "".join(command).strip():
            problems.append(f"{name}: healthcheck has no test")
    return problems


def check_ports_localhost(doc: dict[str, Any]) -> Problems:
    problems = []
    for name, host_ip, host_port, container_port in published_ports(doc):
        if host_ip != "127.0.0.1":
            problems.append(f"{name}: port {container_port} is published on {host_ip or 'all interfaces'}, not 127.0.0.1")
        if host_port is None:
            problems.append(f"{name}: port {container_port} has no fixed host port")
    return problems


def check_published_ports(doc: dict[str, Any], expected: dict[int, int]) -> Problems:
    actual: dict[int, int] = {}
    problems = []
    for name, host_ip, host_port, container_port in published_ports(doc):
        if host_port is None or container_port is None:
            problems.append(f"{name}: unparsable port mapping")
            continue
        if host_port in actual:
            problems.append(f"host port {host_port} is published twice")
        actual[host_port] = container_port
    if actual != expected:
        problems.append(f"published host->container ports {actual} != expected {expected}")
    return problems


# Minimum number of dotted numeric components of an exact version, per image
# (PostgreSQL has two-part versions since 10; a bare "18" would float).
MIN_VERSION_PARTS = {"postgres": 2}
FLOATING_TAG = re.compile(r"latest|stable|nightly|edge|master|main|lts", re.IGNORECASE)
MINIO_RELEASE_TAG = re.compile(r"^RELEASE\.\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z$")


def check_images_pinned(doc: dict[str, Any]) -> Problems:
    problems = []
    for name, svc in services(doc).items():
        image = svc.get("image")
        if not isinstance(image, str) or not image:
            problems.append(f"{name}: no image (a build is not a pinned version)")
            continue
        resolved = resolve_defaults(image)
        if resolved is None:
            problems.append(f"{name}: image {image!r} uses a variable without a default")
            continue
        ref = resolved.split("@", 1)[0]
        repo, _, tag = ref.rpartition(":")
        if not repo or "/" in tag:
            problems.append(f"{name}: image {resolved!r} has no tag")
            continue
        if FLOATING_TAG.search(tag):
            problems.append(f"{name}: image {resolved!r} uses a floating tag")
            continue
        if MINIO_RELEASE_TAG.match(tag):
            continue
        version = re.search(r"\d+(?:\.\d+)*", tag)
        parts = len(version.group(0).split(".")) if version else 0
        need = MIN_VERSION_PARTS.get(repo.rsplit("/", 1)[-1], 3)
        if parts < need:
            problems.append(f"{name}: image {resolved!r} is not pinned to an exact version")
    return problems


SECRET_KEY = re.compile(r"PASSWORD|PASSWD|PWD|SECRET|ACCESS_KEY|TOKEN|CREDENTIAL", re.IGNORECASE)
NOT_A_SECRET = re.compile(r"ALLOW_EMPTY|RANDOM_ROOT|HOST_AUTH_METHOD|_FILE$", re.IGNORECASE)
WHOLE_REFERENCE = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*(?::?-(?P<default>[^}]*))?\}$")
LITERAL_ON_COMMAND_LINE = re.compile(r"(?i)(password|passwd|pwd|secret)[A-Za-z_]*=(?!\$)[^\s'\"]+")


def check_no_literal_secrets(doc: dict[str, Any], readme: str) -> Problems:
    problems = []
    for name, svc in services(doc).items():
        for key, value in env_items(svc):
            if not SECRET_KEY.search(key) or NOT_A_SECRET.search(key):
                continue
            if value is None or value == "":
                continue
            m = WHOLE_REFERENCE.match(str(value))
            if not m:
                problems.append(f"{name}: {key} holds a literal value, use ${{VAR:-}}")
            elif m.group("default") and f"`{m.group('default')}`" not in readme:
                problems.append(f"{name}: {key} defaults to {m.group('default')!r}, which compose/README.md does not document")
        hc = svc.get("healthcheck") or {}
        for text in as_strings(svc.get("command")) + as_strings(svc.get("entrypoint")) + as_strings(hc.get("test")):
            if LITERAL_ON_COMMAND_LINE.search(text):
                problems.append(f"{name}: literal secret on the command line: {text!r}")
    return problems


def check_volumes(doc: dict[str, Any], base_dir: Path) -> Problems:
    problems = []
    declared = set((doc.get("volumes") or {}).keys())
    if not declared:
        problems.append("declares no named volume")
    used = set()
    for name, svc in services(doc).items():
        for spec in svc.get("volumes") or []:
            if isinstance(spec, dict):
                kind, source = spec.get("type"), spec.get("source")
                if kind == "volume":
                    if not source:
                        problems.append(f"{name}: anonymous volume at {spec.get('target')}")
                    elif source not in declared:
                        problems.append(f"{name}: volume {source!r} is not declared")
                    else:
                        used.add(source)
                elif kind == "bind" and source and not (base_dir / source).exists():
                    problems.append(f"{name}: bind mount source {source!r} does not exist")
                continue
            parts = str(spec).split(":")
            if len(parts) == 1:
                problems.append(f"{name}: anonymous volume at {parts[0]}")
                continue
            source = parts[0]
            if source.startswith((".", "/", "~")):
                if not (base_dir / source).exists():
                    problems.append(f"{name}: bind mount source {source!r} does not exist")
            elif source not in declared:
                problems.append(f"{name}: volume {source!r} is not declared")
            else:
                used.add(source)
    for unused in sorted(declared - used):
        problems.append(f"named volume {unused!r} is not used")
    return problems


def check_memory_limits(doc: dict[str, Any]) -> Problems:
    problems = []
    for name, svc in services(doc).items():
        limits = ((svc.get("deploy") or {}).get("resources") or {}).get("limits") or {}
        if not (limits.get("memory") or svc.get("mem_limit")):
            problems.append(f"{name}: no memory limit")
    return problems


def check_lab_url(doc: dict[str, Any], url: str) -> Problems:
    """The URL's port, http_port and the ports of its other nodes are host ports the stack publishes on 127.0.0.1."""
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    nodes = [n.rpartition(":")[2] for n in ",".join(query.get("nodes", [])).split(",") if n]
    wanted = [parts.port] + [int(p) for p in query.get("http_port", []) + nodes]
    local = {host for _, ip, host, _ in published_ports(doc) if ip == "127.0.0.1"}
    return [f"{url}: port {p} is not published on 127.0.0.1" for p in wanted if p not in local]


def check_redirect_port(doc: dict[str, Any], backend: str, env_key: str, port: int) -> Problems:
    problems = []
    svc = services(doc).get(backend)
    if svc is None:
        return [f"no service {backend!r}"]
    env = dict(env_items(svc))
    if str(env.get(env_key)) != str(port):
        problems.append(f"{backend}: {env_key} is {env.get(env_key)!r}, the redirect port is {port}")
    network_mode = str(svc.get("network_mode", ""))
    owner = network_mode.removeprefix("service:") if network_mode.startswith("service:") else backend
    mappings = [(ip, h, c) for name, ip, h, c in published_ports(doc) if name == owner]
    if ("127.0.0.1", port, port) not in mappings:
        problems.append(f"{owner}: does not publish 127.0.0.1:{port}:{port} (same port inside and outside)")
    return problems


def check_host_ports_distinct(docs: dict[str, dict[str, Any]]) -> Problems:
    seen: dict[int, str] = {}
    problems = []
    for file, doc in docs.items():
        for _, _, host_port, _ in published_ports(doc):
            if host_port is None:
                continue
            if host_port in seen and seen[host_port] != file:
                problems.append(f"host port {host_port} is published by {seen[host_port]} and {file}")
            seen.setdefault(host_port, file)
    names: dict[str, str] = {}
    for file, doc in docs.items():
        name = doc.get("name")
        if name in names:
            problems.append(f"project name {name!r} is used by {names[name]} and {file}")
        names[name] = file
    return problems


README_URL = re.compile(r"`((?:starrocks|doris|yugabytedb|postgresql|mariadb|arangodb|galera)://[^`\s]+)`")


def check_seed_machine(doc: dict[str, Any], service: str, *, memory: str | None = "4g",
                       options: tuple[str, ...] = SEED_OPTIONS) -> Problems:
    """The seed's disk limits on every device of ``service``'s blkio_config, its memory, its start options."""
    svc = services(doc).get(service)
    if svc is None:
        return [f"no service {service!r}"]
    problems = []
    blkio = svc.get("blkio_config") or {}
    for key, rate in SEED_DISK.items():
        entries = blkio.get(key) or []
        if not entries:
            problems.append(f"{service}: no blkio_config.{key}")
        for entry in entries:
            if str(entry.get("rate")).lower() != str(rate) or not resolve_defaults(str(entry.get("path", ""))):
                problems.append(f"{service}: blkio_config.{key} is {entry}, the seed's volume has {rate}")
    limit = ((svc.get("deploy") or {}).get("resources") or {}).get("limits", {}).get("memory")
    if memory is not None and str(limit).lower() != memory:
        problems.append(f"{service}: memory limit {limit!r}, the seed's VM had {memory}")
    command = as_strings(svc.get("command"))
    problems += [f"{service}: the seed's option {o} is not in the command" for o in options if o not in command]
    return problems


def check_readme(readme: str, files: list[str]) -> Problems:
    problems = []
    for override, base in OVERRIDES.items():
        command = f"docker compose -f compose/{base} -f compose/{override} up -d"
        if command not in readme:
            problems.append(f"README lacks `{command}`")
    for file in files:
        for command in (f"docker compose -f compose/{file} up -d", f"docker compose -f compose/{file} down -v"):
            if command not in readme:
                problems.append(f"README lacks `{command}`")
    urls = set(README_URL.findall(readme))
    expected = {LAB_URLS[f] for f in files}
    for missing in sorted(expected - urls):
        problems.append(f"README lacks the lab URL {missing}")
    for extra in sorted(urls - expected):
        problems.append(f"README gives a lab URL that no stack serves: {extra}")
    if "not started in the lab's CI" not in " ".join(readme.split()):
        problems.append("README does not say that the stacks are not started in CI")
    return problems


# ----------------------------------------------------------- positive tests ---


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    if not SCHEMA_PATH.is_file():
        pytest.skip(f"Compose schema not found at {SCHEMA_PATH} (shared/ is not beside the repository)")
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def test_compose_folder_holds_exactly_the_expected_stacks():
    assert COMPOSE_FILES == STACK_FILES, "every compose/*.yml needs its lab URL and ports in the tables of this test"
    assert not list(COMPOSE_DIR.glob("*.yaml")), "use the .yml extension"


@pytest.mark.parametrize("file", sorted(OVERRIDES))
def test_override_validates_alone_and_merged_into_its_base(file, schema):
    assert check_schema(load(file), schema) == []
    merged = load_merged(file)
    assert check_schema(merged, schema) == []
    for check in (check_project_name, check_healthchecks, check_ports_localhost, check_images_pinned,
                  check_memory_limits):
        assert check(merged) == [], check.__name__
    assert check_volumes(merged, COMPOSE_DIR) == [] and check_no_literal_secrets(merged, readme_text()) == []
    assert check_published_ports(merged, PUBLISHED[OVERRIDES[file]]) == []


@pytest.mark.parametrize("file", sorted(SEED_MACHINES))
def test_seed_machine_is_rebuilt(file):
    """arangodb.yml: the seed's 4 GB, its volume's IOPS and MB/s, its start options; the YugabyteDB
    override: the same volume (its memory and options are YugabyteDB's own)."""
    own = file == "arangodb.yml"
    problems = check_seed_machine(load_merged(file), SEED_MACHINES[file], memory="4g",
                                  options=SEED_OPTIONS if own else ())
    assert problems == []


@pytest.mark.parametrize("mutate", [
    lambda d: d["services"]["arangodb"]["blkio_config"]["device_read_iops"][0].update(rate=3000),
    lambda d: d["services"]["arangodb"]["blkio_config"].pop("device_write_bps"),
    lambda d: d["services"]["arangodb"]["deploy"]["resources"]["limits"].update(memory="8g"),
    lambda d: d["services"]["arangodb"]["command"].remove("--rocksdb.block-cache-size=256000000"),
], ids=["read iops", "no write bps", "memory", "block cache option"])
def test_seed_machine_check_fails_on_a_different_machine(mutate):
    doc = copy.deepcopy(load("arangodb.yml"))
    mutate(doc)
    assert check_seed_machine(doc, "arangodb")


# What each stack starts (compose/README.md, "Starts" and "Per stack"): service -> image repository.
SERVICE_IMAGES = {
    "starrocks-shared-nothing.yml": {"fe": "starrocks/fe-ubuntu", "be": "starrocks/be-ubuntu"},
    "starrocks-shared-data.yml": {"minio": "quay.io/minio/minio", "fe": "starrocks/fe-ubuntu", "cn": "starrocks/cn-ubuntu"},
    "doris.yml": {"fe": "apache/doris", "be": "apache/doris"},
    "yugabytedb.yml": {"yugabytedb": "yugabytedb/yugabyte"},
    "postgres.yml": {"postgres": "postgres"},
    "mariadb.yml": {"mariadb": "mariadb"},
    "arangodb.yml": {"arangodb": "arangodb"},
    "galera.yml": {"galera1": "mariadb", "galera2": "mariadb", "galera3": "mariadb"},
}
# The version compose/README.md names in its table (``| PostgreSQL 18 |``): image repository -> version prefix.
README_VERSIONS = {"postgres": "PostgreSQL", "mariadb": "MariaDB", "arangodb": "ArangoDB"}


@pytest.mark.parametrize("file", COMPOSE_FILES)
def test_loads_as_yaml(file):
    """The services, images and host ports the README promises (the schema is checked below)."""
    doc = load(file)
    images = {name: resolve_defaults(svc["image"]) for name, svc in services(doc).items()}
    assert {name: image.rpartition(":")[0] for name, image in images.items()} == SERVICE_IMAGES[file]
    if file == "doris.yml":  # one repository, the role in the tag
        assert {name: image.rpartition(":")[2].split("-")[0] for name, image in images.items()} == {"fe": "fe", "be": "be"}
    readme = readme_text()
    for name, image in images.items():
        repo, _, tag = image.rpartition(":")
        if repo in README_VERSIONS:  # the README's table names the major (and minor) version of the pinned tag
            (named,) = re.findall(rf"\| {README_VERSIONS[repo]} ([\d.]+)", readme)
            assert tag == named or tag.startswith(named + "."), (file, image, named)
        for port in (p for _, _, p, _ in published_ports({"services": {name: services(doc)[name]}})):
            assert re.search(rf"\|[^|\n]*`{re.escape(file)}`[^\n]*\b{port}\b", readme), (file, name, port)


@pytest.mark.parametrize("file", COMPOSE_FILES)
def test_validates_against_compose_schema(file, schema):
    assert check_schema(load(file), schema) == []


@pytest.mark.parametrize(
    "file, check",
    [
        (file, check)
        for file in COMPOSE_FILES
        for check in (
            check_project_name,
            check_healthchecks,
            check_ports_localhost,
            check_images_pinned,
            check_memory_limits,
        )
    ],
    ids=lambda v: v if isinstance(v, str) else v.__name__,
)
def test_convention(file, check):
    assert check(load(file)) == []


@pytest.mark.parametrize("file", COMPOSE_FILES)
def test_no_literal_secrets(file):
    assert check_no_literal_secrets(load(file), readme_text()) == []


@pytest.mark.parametrize("file", COMPOSE_FILES)
def test_named_volumes_and_existing_bind_sources(file):
    assert check_volumes(load(file), COMPOSE_DIR) == []


@pytest.mark.parametrize("file", STACK_FILES)
def test_published_ports_are_the_lab_ports(file):
    doc = load(file)
    assert check_published_ports(doc, PUBLISHED[file]) == []
    assert check_lab_url(doc, LAB_URLS[file]) == []


@pytest.mark.parametrize("file", sorted(REDIRECT_BACKENDS))
def test_stream_load_redirect_port_is_the_same_inside_and_outside(file):
    assert check_redirect_port(load(file), *REDIRECT_BACKENDS[file]) == []


def test_stacks_can_run_side_by_side():
    assert check_host_ports_distinct({f: load(f) for f in COMPOSE_FILES}) == []


def test_readme_gives_commands_and_urls_for_every_stack():
    assert check_readme(readme_text(), STACK_FILES) == []


@pytest.mark.parametrize("file", STACK_FILES)
def test_readme_url_ports_are_published(file):
    """Each URL as written in compose/README.md points at ports the stack publishes."""
    readme_urls = set(README_URL.findall(readme_text()))
    assert LAB_URLS[file] in readme_urls, f"README has no URL for {file}"
    assert check_lab_url(load(file), LAB_URLS[file]) == []


def _referenced_scripts() -> set[str]:
    names = set()
    for file in COMPOSE_FILES:
        text = (COMPOSE_DIR / file).read_text(encoding="utf-8")
        names.update(re.findall(r"/ingestlab/([\w.-]+\.sh)", text))
    return names


def test_referenced_scripts_exist():
    missing = sorted(n for n in _referenced_scripts() if not (SCRIPTS_DIR / n).is_file())
    assert not missing, f"scripts referenced by compose files but missing: {missing}"


@pytest.mark.parametrize("script", sorted(p.name for p in SCRIPTS_DIR.glob("*.sh")))
def test_scripts_parse(script):
    """`bash -n` / `sh -n`: the start scripts at least parse."""
    path = SCRIPTS_DIR / script
    shell = "sh" if path.read_text(encoding="utf-8").startswith("#!/bin/sh") else "bash"
    if shutil.which(shell) is None:
        pytest.skip(f"{shell} not installed")
    result = subprocess.run([shell, "-n", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


# ----------------------------------------------------------- negative tests ---


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _delete(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


SN, SD, DORIS, YB, PG, MARIA = (
    "starrocks-shared-nothing.yml",
    "starrocks-shared-data.yml",
    "doris.yml",
    "yugabytedb.yml",
    "postgres.yml",
    "mariadb.yml",
)

# (id, stack, mutation, check taking the mutated document)
BROKEN_CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], Callable[[dict[str, Any]], Problems]]] = [
    ("no project name", PG, _delete(["name"]), check_project_name),
    ("bad project name", PG, _set(["name"], "Ingest Lab"), check_project_name),
    ("healthcheck missing", SN, _delete(["services", "be", "healthcheck"]), check_healthchecks),
    ("healthcheck disabled", PG, _set(["services", "postgres", "healthcheck"], {"disable": True}), check_healthchecks),
    ("healthcheck NONE", MARIA, _set(["services", "mariadb", "healthcheck", "test"], ["NONE"]), check_healthchecks),
    ("port on all interfaces", SN, _set(["services", "fe", "ports", 0], "9030:9030"), check_ports_localhost),
    ("port on 0.0.0.0", DORIS, _set(["services", "fe", "ports", 1], "0.0.0.0:8230:8030"), check_ports_localhost),
    ("port on ::1", PG, _set(["services", "postgres", "ports", 0], "[::1]:5432:5432"), check_ports_localhost),
    ("long syntax without host_ip", YB, _set(["services", "yugabytedb", "ports", 0], {"target": 5433, "published": 5433}), check_ports_localhost),
    ("container port only", MARIA, _set(["services", "mariadb", "ports", 0], "3306"), check_ports_localhost),
    ("image without tag", PG, _set(["services", "postgres", "image"], "postgres"), check_images_pinned),
    ("image latest", PG, _set(["services", "postgres", "image"], "postgres:latest"), check_images_pinned),
    ("image default latest", PG, _set(["services", "postgres", "image"], "postgres:${POSTGRES_VERSION:-latest}"), check_images_pinned),
    ("image variable without default", PG, _set(["services", "postgres", "image"], "postgres:${POSTGRES_VERSION}"), check_images_pinned),
    ("image floating major", PG, _set(["services", "postgres", "image"], "postgres:18"), check_images_pinned),
    ("image floating minor", MARIA, _set(["services", "mariadb", "image"], "mariadb:10.11"), check_images_pinned),
    ("image -latest suffix", SN, _set(["services", "fe", "image"], "starrocks/fe-ubuntu:4.1-latest"), check_images_pinned),
    ("image registry port, no tag", SD, _set(["services", "minio", "image"], "localhost:5000/minio/minio"), check_images_pinned),
    ("no memory limit", PG, _delete(["services", "postgres", "deploy"]), check_memory_limits),
    ("anonymous volume", PG, _set(["services", "postgres", "volumes"], ["/var/lib/postgresql"]), lambda d: check_volumes(d, COMPOSE_DIR)),
    ("undeclared volume", MARIA, _set(["services", "mariadb", "volumes"], ["other:/var/lib/mysql"]), lambda d: check_volumes(d, COMPOSE_DIR)),
    ("missing bind source", SN, _set(["services", "fe", "volumes", 0], "./no-such-dir:/ingestlab:ro"), lambda d: check_volumes(d, COMPOSE_DIR)),
    ("no named volumes", YB, _delete(["volumes"]), lambda d: check_volumes(d, COMPOSE_DIR)),
    ("port differs from lab URL", PG, _set(["services", "postgres", "ports", 0], "127.0.0.1:5442:5432"), lambda d: check_lab_url(d, LAB_URLS[PG])),
    ("http_port differs from lab URL", DORIS, _set(["services", "fe", "ports", 1], "127.0.0.1:8231:8030"), lambda d: check_lab_url(d, LAB_URLS[DORIS])),
    ("published mapping differs", SD, _set(["services", "fe", "ports", 0], "127.0.0.1:9130:9031"), lambda d: check_published_ports(d, PUBLISHED[SD])),
    ("redirect port remapped", SD, _set(["services", "fe", "ports", 2], "127.0.0.1:8140:8040"), lambda d: check_redirect_port(d, *REDIRECT_BACKENDS[SD])),
    ("backend HTTP port env differs", DORIS, _set(["services", "be", "environment", "DORIS_BE_HTTP_PORT"], "8040"), lambda d: check_redirect_port(d, *REDIRECT_BACKENDS[DORIS])),
    ("literal password (dict env)", MARIA, _set(["services", "mariadb", "environment", "MARIADB_ROOT_PASSWORD"], "hunter2"), lambda d: check_no_literal_secrets(d, readme_text())),
    ("literal password (list env)", PG, _set(["services", "postgres", "environment"], ["POSTGRES_PASSWORD=hunter2"]), lambda d: check_no_literal_secrets(d, readme_text())),
    ("literal secret key", SD, _set(["services", "cn", "environment", "SR_S3_SECRET_KEY"], "minio123"), lambda d: check_no_literal_secrets(d, readme_text())),
    ("undocumented secret default", SN, _set(["services", "fe", "environment", "MYSQL_PWD"], "${STARROCKS_ROOT_PASSWORD:-not-in-the-readme}"), lambda d: check_no_literal_secrets(d, readme_text())),
    ("password on the command line", YB, lambda d: d["services"]["yugabytedb"]["command"].append("--ysql_password=hunter2"), lambda d: check_no_literal_secrets(d, readme_text())),
]


@pytest.mark.parametrize("case_id, file, mutate, check", BROKEN_CASES, ids=[c[0] for c in BROKEN_CASES])
def test_check_fails_on_broken_stack(case_id, file, mutate, check):
    doc = load(file)
    assert check(doc) == [], f"precondition: the real {file} passes"
    broken = copy.deepcopy(doc)
    mutate(broken)
    assert check(broken), f"{case_id}: the check did not notice the broken {file}"


@pytest.mark.parametrize(
    "case_id, mutate",
    [
        ("unknown service key", _set(["services", "fe", "no_such_compose_key"], 1)),
        ("ports not a list", _set(["services", "fe", "ports"], "127.0.0.1:9030:9030")),
        ("unknown top-level key", _set(["no_such_top_level_key"], {})),
        ("healthcheck retries not a number", _set(["services", "fe", "healthcheck", "retries"], {"n": 3})),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_schema_check_fails_on_broken_stack(case_id, mutate, schema):
    broken = copy.deepcopy(load(SN))
    mutate(broken)
    assert check_schema(broken, schema), f"{case_id}: the schema accepted a broken file"


def test_side_by_side_check_fails_on_port_clash():
    docs = {f: load(f) for f in STACK_FILES}
    docs[DORIS]["services"]["fe"]["ports"][0] = "127.0.0.1:9030:9030"  # StarRocks shared-nothing's port
    assert check_host_ports_distinct(docs)


def test_side_by_side_check_fails_on_shared_project_name():
    docs = {f: load(f) for f in STACK_FILES}
    docs[MARIA]["name"] = docs[PG]["name"]
    assert check_host_ports_distinct(docs)


@pytest.mark.parametrize(
    "case_id, edit",
    [
        ("URL removed", lambda t: t.replace(LAB_URLS[YB], "")),
        ("URL with another port", lambda t: t.replace(LAB_URLS[SD], LAB_URLS[SD].replace("9130", "9131"))),
        ("up command missing", lambda t: t.replace("docker compose -f compose/doris.yml up -d", "")),
        ("down command missing", lambda t: t.replace("docker compose -f compose/mariadb.yml down -v", "")),
        ("CI statement missing", lambda t: t.replace("not started in the lab's CI", "started")),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_readme_check_fails_on_broken_readme(case_id, edit):
    text = readme_text()
    assert check_readme(text, STACK_FILES) == []
    assert check_readme(edit(text), STACK_FILES), f"{case_id}: the README check did not notice"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("postgres:${POSTGRES_VERSION:-18.7}", "postgres:18.7"),
        ("x:${A-1.2.3}", "x:1.2.3"),
        ("x:${A}", None),
        ("x:${A:?must be set}", None),
        ("$${NOT_A_VARIABLE}", "${NOT_A_VARIABLE}"),
    ],
)
def test_resolve_defaults(value, expected):
    assert resolve_defaults(value) == expected


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("127.0.0.1:9130:9030", ("127.0.0.1", 9130, 9030)),
        ("9030:9030", (None, 9030, 9030)),
        ("9030", (None, None, 9030)),
        ("127.0.0.1:8040:8040/tcp", ("127.0.0.1", 8040, 8040)),
        ("[::1]:5432:5432", ("::1", 5432, 5432)),
        ({"host_ip": "127.0.0.1", "published": "5433", "target": 5433}, ("127.0.0.1", 5433, 5433)),
    ],
)
def test_parse_port(spec, expected):
    assert parse_port(spec) == expected
