"""model_judge.py: the tasks of `make model-check` and a judge of what a person keeps of each.

Python 3.11 standard library only; imported by tools/model_check.py. Each task is written as a
user would write it and has a shape; every new store entry is judged by the shape's rule, as a
person reading the product would, and gets a verdict: kept, or junk with the reason.

Rules across all shapes, in this order:
- a copy of the task's own text (or of any prompt text of config.json), or contained in it: junk;
- a head ("head: text") with a word of 12+ letters that no list of the task knows (a made-up or
  run-together word: "gardenwithyourself", "satsumabiranghw"): junk;
- a text about the task rather than its subject ("this tip", "the next entry", "the task"): junk;
- an entry whose text is mostly not in the task's language: junk. English: for a text of 5 or
  more words, at least one English function word (the, a, is, of, to, your, ...) and no more
  German than English function words, and under a quarter of the words with letters English
  does not use (é, ñ, ß, ...); German: at least two German function words (der, die,
  das, ist, ein, eine, und, von, ...) and more German than English ones. Either language: no more
  than a quarter of the words unreadable (15+ letters, no vowel, or 5 consonants in a row);
- a near-duplicate of an earlier entry (difflib ratio >= 0.8 on the text, case and spacing
  folded; >= 0.6 for a story paragraph or a day of a plan), or the same name as an earlier entry
  of a glossary or list: junk.
Then the shape's own rule:
- glossary: the entry reads "name: text" (also "name - text"); the name (a leading article and a
  plural ending ignored) is a real term of the domain: one of a broad list (several hundred for
  astronomy, multi-word terms such as "black hole" included), or a two-word name whose last word
  is one ("spiral galaxy"). A made-up name is junk however its text reads. The text is a
  sentence in the task's language: at least 4 words, not the name again.
- list of named things: "name: text"; the name's first word (backticks and quotes dropped) is a
  real thing of the kind (shell commands: ls, cd, grep, ... one- and two-letter names included)
  and the text says what it does: at least 3 words in the task's language.
- tips: the text (a "Tip N:" label dropped) tells what to do: it starts with an imperative or
  advice verb (water, plant, use, choose, ...) or holds an advice phrase (should, make sure,
  avoid, don't, try to, ...), and names the task's subject: a word of the subject's broad list
  (tomato, plant, soil, water, seed, sun, ...). At least 4 words.
- facts: the text names the subject (a planet, the sun, a moon, an orbit, ...) and has a verb
  (is, are, has, orbits, takes, ... or a verb form ending in -s/-ed); at least 5 words; an
  entry "Word: text" whose Word is not of the subject is a definition of an unrelated word: junk.
- story: a paragraph (a "Paragraph N:" label dropped) of at least 8 words that mentions the
  story's world (keeper, lighthouse, sea, light, storm, ship, ...) and is not a near-copy
  (ratio >= 0.6) of an earlier paragraph: it moves the story on.
- plan: a day (a "Day N:" label dropped) of at least 4 words that names a place of the trip's
  country or an activity (visit, explore, temple, museum, hike, ...) and is not a near-copy
  (ratio >= 0.6) of another day.
- German glossary: the glossary rule, with a real astronomy term in German or its international
  form (the English list counts), and a German sentence (the language rule above).
- a task of the user's own (MODEL_CHECK_TASK_TEXT): no shape rule; what passes the rules above is
  printed for a person to read (kept: none counted).
Entries filed under the tag `doubt` are the agent's own doubts: counted apart and shown, never
judged as product.
"""
import difflib, os, re

# --- Languages ---------------------------------------------------------------------------------
EN_FUNCTION = set("""the a an is are was were be been being of to in on at by for with from and or but
not no this that these those it its it's they them their there here your you yours we our us he
she his her him as if then than so do does did don't can could should would will may might must
has have had into onto over under about after before each every one some any all more most
very also which who what when where how why up out off just only such""".split())
DE_FUNCTION = set("""der die das den dem des ein eine einer eines einem einen ist sind war waren wird
werden wurde und oder aber nicht kein keine von vom zu zum zur im in am an auf aus bei mit nach
um für fur über uber unter durch als wie auch sich sie er es wir ihr man dass daß so sehr noch
nur schon wenn weil denn dieser diese dieses jeder jede jedes sein seine ihre hat haben kann
können""".split())
LANG = {"en": EN_FUNCTION, "de": DE_FUNCTION}
WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def words(text):
    return [w.lower() for w in WORD.findall(text)]


def unreadable(w):
    return (len(w) >= 15 or (len(w) >= 4 and not re.search(r"[aeiouyäöüàâéèêëîïôûùœ]", w))
            or re.search(r"[bcdfghjklmnpqrstvwxzß]{5}", w) is not None)


def language_problem(text, lang):
    """Why `text` is mostly not in the task's language, or None."""
    ws = words(text)
    if not ws:
        return "no words"
    if sum(map(unreadable, ws)) * 4 > len(ws):
        return "mostly unreadable words"
    if lang not in LANG:
        return None  # a language the judge has no words of (a task of the user's own): a person reads it
    if lang == "en" and sum(bool(re.search(r"[^a-z'’]", w)) for w in ws) * 4 >= len(ws):
        return "not English (letters English does not use)"
    en = sum(w in EN_FUNCTION for w in ws)
    de = sum(w in DE_FUNCTION and w not in EN_FUNCTION for w in ws)
    if lang == "de":
        if de < 2 or de <= en:
            return f"not German ({de} German, {en} English function words)"
    elif len(ws) >= 5 and (en == 0 or de > en):
        return f"not English ({en} English, {de} German function words)"
    return None


# --- Word lists of the domains -----------------------------------------------------------------
def wordset(text):
    """Single words and, on lines after '|', multi-word phrases separated by ';'."""
    out = set()
    for line in text.strip().splitlines():
        if line.startswith("|"):
            out |= {" ".join(p.split()).lower() for p in line[1:].split(";") if p.strip()}
        else:
            out |= set(line.lower().split())
    return out


ASTRONOMY = wordset("""
star stars sun planet planets moon moons comet comets asteroid asteroids meteor meteors meteoroid
meteorite galaxy galaxies nebula nebulae nebulas universe cosmos quasar quasars pulsar pulsars
supernova supernovae supernovas nova novae magnetar blazar constellation constellations asterism
orbit orbits eclipse eclipses equinox solstice zenith nadir azimuth altitude declination ascension
parallax redshift blueshift aberration precession nutation perihelion aphelion perigee apogee
periapsis apoapsis apsis ecliptic meridian horizon transit occultation conjunction opposition
elongation syzygy libration albedo magnitude luminosity brightness spectrum spectra spectroscopy
spectroscope telescope telescopes observatory observatories planetarium astrolabe sextant
binoculars eyepiece reflector refractor interferometer interferometry photometry astrometry
astronomy astronomer astrophysics astrophysicist cosmology cosmologist astrobiology astrochemistry
astrophotography astronaut cosmonaut spacecraft satellite satellites probe rover orbiter lander
rocket shuttle
gravity gravitation mass density radiation light lightyear parsec parsecs au
photon photons neutrino neutrinos plasma corona chromosphere photosphere sunspot sunspots flare
flares prominence heliosphere heliopause magnetosphere ionosphere atmosphere exosphere aurora
auroras aurorae
mercury venus earth mars jupiter saturn uranus neptune pluto ceres eris haumea makemake sedna
titan europa ganymede callisto io enceladus triton phobos deimos charon luna miranda oberon
titania rhea iapetus dione tethys mimas hyperion
sirius polaris betelgeuse rigel vega arcturus antares aldebaran canopus capella procyon altair
deneb spica pollux castor fomalhaut regulus proxima andromeda orion pleiades hyades ursa cassiopeia
cygnus lyra scorpius sagittarius taurus leo virgo gemini aries pisces aquarius capricornus libra
cancer draco perseus pegasus centaurus crux hercules
exoplanet exoplanets protostar protoplanet planetesimal planetoid plutoid centaur centaurs
trojan trojans kuiper oort heliocentric geocentric
wormhole singularity spacetime inflation multiverse cepheid cepheids
variable binary binaries cluster clusters globular void voids filament filaments halo
accretion ejecta nucleosynthesis fusion ion ions isotope
crater craters mare maria regolith highlands rille rilles caldera volcano
tide tides tidal retrograde prograde rotation revolution axis tilt obliquity
day year month sidereal synodic epoch julian
bolide fireball meteoroids radiant
umbra penumbra antumbra corona coronagraph
astronomical astrophysical celestial cosmic galactic interstellar intergalactic interplanetary
stellar solar lunar planetary
zodiac ecliptic hemisphere pole poles equator
nebular protoplanetary circumstellar
hubble kepler galileo copernicus newton einstein ptolemy herschel halley
spaghettification quasi-star hypernova kilonova
| black hole; black holes; white dwarf; white dwarfs; red dwarf; red dwarfs; brown dwarf; brown dwarfs
| red giant; red giants; red supergiant; blue giant; blue supergiant; supergiant; hypergiant; subgiant
| neutron star; neutron stars; dwarf planet; dwarf planets; dwarf star; main sequence; main sequence star
| event horizon; light year; light years; light-year; light-years; astronomical unit; solar system
| solar wind; solar flare; solar flares; solar eclipse; lunar eclipse; total eclipse; annular eclipse
| partial eclipse; milky way; the milky way; big bang; big bang theory; dark matter; dark energy
| cosmic microwave background; cosmic background radiation; cosmic rays; cosmic ray; gamma ray burst
| gamma-ray burst; asteroid belt; kuiper belt; oort cloud; main belt; trojan asteroid; near earth object
| shooting star; falling star; meteor shower; meteor showers; north star; pole star; evening star
| morning star; binary star; double star; variable star; variable stars; variable star; star cluster
| open cluster; globular cluster; galaxy cluster; spiral galaxy; elliptical galaxy; irregular galaxy
| barred spiral galaxy; dwarf galaxy; local group; supercluster; active galactic nucleus
| accretion disk; accretion disc; protoplanetary disk; planetary nebula; emission nebula
| reflection nebula; dark nebula; interstellar medium; stellar wind; stellar evolution
| stellar nucleosynthesis; nuclear fusion; hertzsprung russell diagram; hertzsprung-russell diagram
| hr diagram; apparent magnitude; absolute magnitude; right ascension; celestial sphere
| celestial equator; celestial pole; celestial body; celestial object; celestial coordinates
| escape velocity; orbital period; orbital velocity; orbital resonance; tidal locking; tidally locked
| roche limit; hill sphere; lagrange point; lagrangian point; lagrange points; habitable zone
| goldilocks zone; space probe; space station; international space station; space telescope
| hubble space telescope; james webb space telescope; radio telescope; optical telescope
| reflecting telescope; refracting telescope; radio astronomy; x-ray astronomy; infrared astronomy
| gravitational wave; gravitational waves; gravitational lensing; gravitational lens; redshift
| doppler effect; doppler shift; hubble constant; hubble's law; cosmic inflation; steady state theory
| heat death; big crunch; big rip; dark sky; light pollution; zodiacal light; gegenschein
| great red spot; rings of saturn; planetary ring; planetary rings; ring system; natural satellite
| artificial satellite; blue moon; full moon; new moon; half moon; crescent moon; gibbous moon
| harvest moon; super moon; supermoon; blood moon; lunar phase; lunar phases; phases of the moon
| waxing moon; waning moon; first quarter; last quarter; dark side of the moon; far side of the moon
| sunspot cycle; solar cycle; solar maximum; solar minimum; coronal mass ejection; solar prominence
| northern lights; southern lights; aurora borealis; aurora australis; van allen belt
| terrestrial planet; terrestrial planets; gas giant; gas giants; ice giant; ice giants; rocky planet
| inner planets; outer planets; minor planet; hot jupiter; super earth; super-earth; rogue planet
| exoplanet transit; transit method; radial velocity; proper motion; light curve; spectral class
| spectral type; spectral line; absorption line; emission line; solar mass; solar masses
| chandrasekhar limit; schwarzschild radius; photon sphere; accretion; quasi-stellar object
| x-ray binary; eclipsing binary; cepheid variable; rr lyrae; type ia supernova; core collapse
| t tauri star; wolf-rayet star; o-type star; star formation; stellar nursery; molecular cloud
| giant molecular cloud; bok globule; herbig-haro object; jets; relativistic jet; galactic center
| galactic nucleus; galactic halo; galactic disk; spiral arm; spiral arms; central bulge
| supermassive black hole; stellar black hole; stellar-mass black hole; primordial black hole
| intermediate-mass black hole; hawking radiation; cosmic string; multiverse; observable universe
| cosmological constant; cosmological principle; expanding universe; age of the universe
| space time; space-time; time dilation; general relativity; special relativity; speed of light
| julian date; sidereal day; sidereal year; solar day; tropical year; leap year; lunar month
| synodic month; sidereal month; vernal equinox; autumnal equinox; summer solstice; winter solstice
| zenith distance; local sidereal time; hour angle; first point of aries; precession of the equinoxes
| impact crater; near-earth asteroid; near-earth object; trans-neptunian object; scattered disc
| centaur; long-period comet; short-period comet; comet tail; coma; nucleus; ion tail; dust tail
| meteor stream; perseids; leonids; geminids; orion nebula; crab nebula; andromeda galaxy
| magellanic clouds; large magellanic cloud; small magellanic cloud; alpha centauri; proxima centauri
| big dipper; little dipper; orion's belt; summer triangle; winter hexagon; southern cross
""")

# German astronomy terms; the international (English-spelled) forms count as well.
ASTRONOMY_DE = wordset("""
stern sterne sonne planet planeten mond monde komet kometen asteroid asteroiden meteor meteore
meteorit meteoriten meteoroid galaxie galaxien nebel universum weltall kosmos weltraum all quasar
pulsar supernova nova sternbild sternbilder umlaufbahn bahn orbit finsternis sonnenfinsternis
mondfinsternis äquinoktium tagundnachtgleiche sonnenwende zenit horizont ekliptik meridian
rotverschiebung blauverschiebung helligkeit leuchtkraft spektrum teleskop fernrohr sternwarte
observatorium planetarium astronomie astronom astrophysik kosmologie raumsonde satellit rakete
raumfahrt schwerkraft gravitation masse dichte strahlung licht lichtjahr lichtjahre parsec photon
neutrino plasma korona chromosphäre photosphäre sonnenfleck sonnenflecken sonnenwind polarlicht
polarlichter magnetosphäre atmosphäre merkur venus erde mars jupiter saturn uranus neptun pluto
ceres eris titan europa ganymed kallisto triton sirius polarstern beteigeuze rigel wega
andromeda orion plejaden exoplanet exoplaneten protostern zwergplanet zwergplaneten zwergstern
riese riesenstern überriese sternhaufen kugelsternhaufen galaxienhaufen sternschnuppe
sternschnuppen krater gezeiten rotation achse neigung tierkreis äquator pol himmelskörper
himmelspol himmelsäquator himmelskugel milchstraße milchstrasse urknall wurmloch singularität
raumzeit inflation akkretion akkretionsscheibe ereignishorizont magnetar kilonova hypernova
neumond vollmond halbmond mondphase mondphasen schwarzschildradius gravitationswelle
gravitationswellen gravitationslinse dunkelwolke molekülwolke sonnensystem planetensystem
asteroidengürtel kuipergürtel oortsche meteorstrom perseiden raumstation weltraumteleskop
radioteleskop spiralgalaxie spiralarm halo bulge sternentstehung hauptreihe fixstern wandelstern
morgenstern abendstern doppelstern veränderlicher perihel aphel perigäum apogäum parallaxe
präzession albedo magnitude deklination rektaszension azimut
| schwarzes loch; schwarze löcher; schwarzen loch; weißer zwerg; weisser zwerg; weiße zwerge
| roter zwerg; roter riese; brauner zwerg; blauer riese; roter überriese; dunkle materie
| dunkle energie; kosmische hintergrundstrahlung; kosmische strahlung; astronomische einheit
| scheinbare helligkeit; absolute helligkeit; großer wagen; grosser wagen; kleiner wagen
| großer bär; kleiner bär; oortsche wolke; schwarzes loch; supermassereiches schwarzes loch
""") | ASTRONOMY

SHELL_COMMANDS = wordset("""
ls cd pwd mkdir rmdir rm cp mv touch cat less more head tail grep egrep fgrep rgrep find locate
updatedb which whereis whatis type file stat du df free top htop ps kill killall pkill pgrep nice
renice jobs bg fg nohup disown sleep wait time watch echo printf read export env printenv set
unset alias unalias source history clear reset exit logout shutdown reboot halt poweroff uptime
uname hostname hostnamectl whoami who w id groups users last su sudo passwd useradd userdel
usermod groupadd groupdel chmod chown chgrp umask ln readlink realpath basename dirname tar gzip
gunzip zip unzip bzip2 bunzip2 xz unxz zcat 7z rsync scp sftp ssh ssh-keygen ssh-copy-id ftp
wget curl ping traceroute tracepath netstat ss ip ifconfig route arp dig nslookup host nc netcat
telnet nmap iptables ufw firewall-cmd mount umount lsblk blkid fdisk parted mkfs fsck dd sync
lsof lsusb lspci lsmod modprobe insmod rmmod dmesg journalctl systemctl service crontab cron at
batch man info help apropos sort uniq wc cut paste join split tr sed awk gawk tee xargs diff cmp
comm patch nl fold fmt column rev tac od hexdump xxd strings base64 md5sum sha1sum sha256sum
cksum date cal bc expr seq yes true false test shuf factor apt apt-get apt-cache dpkg yum dnf rpm
pacman zypper snap flatpak brew pip make gcc git vim vi nano emacs ed pico screen tmux bash sh zsh
fish ksh csh dash exec eval trap shift getopts let declare local return break continue pushd popd
dirs chroot lscpu lsattr chattr sysctl ulimit vmstat iostat mpstat sar strace ltrace gdb tree
install mktemp shred wall write mesg tput stty tty script look open xdg-open jq ncdu ranger mc
""")

TOMATO = wordset("""
tomato tomatoes plant plants planting plant's seed seeds seedling seedlings soil soils water
watering watered sun sunlight sunny shade light garden gardens gardening gardener pot pots
container containers bed beds raised compost mulch mulching fertilizer fertiliser fertilize
fertilise feed feeding nutrient nutrients nitrogen potassium phosphorus calcium manure stake
stakes staking cage cages trellis support prune pruning pinch sucker suckers vine vines stem
stems leaf leaves root roots fruit fruits fruiting flower flowers flowering blossom blossoms
pollinate pollination harvest harvesting ripe ripen ripening pick picking grow growing grown
germinate germination transplant transplanting sow sowing spacing space pest pests aphid aphids
hornworm hornworms whitefly disease diseases blight wilt rot mildew fungus fungal spray frost
temperature warm heat cold weather season spring summer indoors indoor outdoor outdoors window
windowsill balcony patio yard variety varieties cherry heirloom hybrid determinate indeterminate
moisture moist drain drainage irrigation hose drip rain humidity ph lime
""")

SOLAR = wordset("""
planet planets sun solar mercury venus earth mars jupiter saturn uranus neptune pluto moon moons
orbit orbits orbital orbiting ring rings asteroid asteroids comet comets dwarf gas giant giants
rocky terrestrial atmosphere atmospheres surface core mantle crust gravity day days year years
rotation rotates rotate axis tilt temperature storm storms spot red great volcano volcanoes
olympus mons valles marineris titan europa ganymede callisto io phobos deimos triton charon
enceladus ceres kuiper belt system star
""")
FACT_VERBS = set("""is are was were has have had orbits orbit takes take spins spin rotates rotate
lies lie sits contains contain consists consist reaches reach lasts last holds hold measures measure
weighs weigh makes make gives give covers cover appears appear shines shine travels travel moves
move means can could would will became become becomes known called named formed form comes come
""".split())

DOG_STORY = wordset("""
girl girls dog dogs puppy puppies pup lost found find finds finding owner owners home house street
streets park road collar tag leash bark barked barking tail paw paws fur ran run running search
searched poster posters neighbor neighbour neighbors neighbours family mother father mom dad
friend friends school rain night morning walk walked name named she her he his they them
""")

STORY = wordset("""
keeper keepers lighthouse lighthouses lamp lantern light lights beam beams sea seas ocean oceans
wave waves tide tides storm storms wind winds rain fog mist night nights dark darkness ship ships
boat boats sailor sailors captain crew shore shores coast rock rocks cliff cliffs island harbor
harbour tower stairs gull gulls lens flame beacon wreck shipwreck rescue old man woman he she his
her him they village fisherman fishermen lonely alone watch keeper's horizon water sky stars
thunder lightning
""")

JAPAN_PLACES = wordset("""
tokyo kyoto osaka nara hiroshima miyajima itsukushima sapporo hokkaido okinawa naha fukuoka
nagoya kobe yokohama kamakura nikko hakone fuji kanazawa takayama shirakawa shirakawago
matsumoto nagano sendai kagoshima nagasaki kumamoto beppu okayama himeji kurashiki takamatsu
matsuyama kochi kyushu shikoku honshu kanto kansai tohoku shinjuku shibuya asakusa ginza akihabara
harajuku roppongi ueno odaiba ikebukuro gion arashiyama fushimi inari kinkakuji ginkakuji
kiyomizu kiyomizudera todaiji dotonbori namba umeda koyasan koya ise naoshima kawaguchiko
kawaguchi karuizawa hakodate otaru niseko furano biei japan japanese
| mount fuji; mt fuji; mt. fuji; fushimi inari; golden pavilion; tokyo tower; tokyo skytree
| peace memorial; osaka castle; himeji castle; meiji shrine; senso-ji; sensoji; tsukiji
| bamboo forest; deer park; fuji five lakes
""")
JAPAN_ACTIVITIES = wordset("""
visit visiting visited explore exploring explored tour touring see seeing sightseeing stroll
walk walking hike hiking climb climbing shop shopping eat eating dine dining taste tasting try
relax relaxing soak bathe ride riding travel traveling travelling arrive arrival depart
departure fly flight train shinkansen bus ferry check hotel ryokan onsen temple temples shrine
shrines castle castles museum museums garden gardens park parks market markets district
neighborhood neighbourhood street streets palace tower festival tea ceremony sushi ramen
sake food cuisine lunch dinner breakfast restaurant izakaya karaoke kimono geisha anime
manga beach beaches island islands lake lakes mountain mountains forest hot spring
""")

# --- Held-out tasks' lists (the lead does not tune on these) -------------------------------------
MUSIC = wordset("""
melody harmony rhythm tempo beat meter metre measure bar note notes rest chord chords scale
scales key keys pitch tone timbre octave interval unison dissonance consonance cadence
modulation transposition syncopation accent staccato legato crescendo decrescendo diminuendo
forte piano fortissimo pianissimo mezzo dynamics allegro andante adagio largo presto moderato
lento vivace ritardando accelerando rubato fermata tremolo vibrato trill glissando arpeggio
ostinato riff motif theme variation counterpoint fugue canon round sonata symphony concerto
overture suite prelude etude étude nocturne waltz march minuet scherzo rondo requiem opera
aria recitative oratorio cantata chorus choir ensemble orchestra quartet quintet trio duet solo
soloist conductor composer composition score sheet staff stave clef treble bass alto tenor
soprano baritone mezzo-soprano countertenor falsetto timpani percussion strings woodwind brass
violin viola cello double bass contrabass harp guitar lute mandolin banjo ukulele flute piccolo
oboe clarinet bassoon saxophone trumpet trombone tuba horn cornet organ harpsichord keyboard
synthesizer drum drums cymbal xylophone marimba glockenspiel triangle tambourine accordion
harmonica bagpipes sharp flat natural accidental major minor mode modes dorian lydian
mixolydian phrygian aeolian locrian ionian pentatonic chromatic diatonic tonic dominant
subdominant mediant leading tonality atonality polyphony homophony monophony texture form
verse bridge refrain hook coda intro outro crescendo fade pizzicato arco mute sforzando
dotted triplet quaver crotchet minim semibreve semiquaver whole half quarter eighth sixteenth
time signature libretto lyrics lyric ballad anthem hymn blues jazz rock pop folk classical
baroque romantic renaissance hip-hop reggae swing improvisation improvise jam gig encore
acoustic amplifier tuning tuner metronome capo fret frets bow reed mouthpiece pedal sustain
| time signature; key signature; major scale; minor scale; perfect pitch; absolute pitch
| relative pitch; circle of fifths; sheet music; double bass; grand piano; french horn
| english horn; power chord; seventh chord; twelve bar blues; call and response; a cappella
| da capo; dal segno; sotto voce; con brio; basso continuo; tone colour; tone color
""")
# Honeybees: a facts task added in session 21 that no run had seen before it was measured.
BEES = wordset("""
bee bees honeybee honeybees honey hive hives colony colonies queen queens worker workers drone
drones nectar pollen pollinate pollinates pollination pollinator pollinators flower flowers wax
beeswax comb combs honeycomb cell cells larva larvae egg eggs brood sting stings stinger dance
waggle swarm swarms forage foraging forager royal jelly propolis apis mellifera insect insects
wing wings antenna antennae species beekeeper beekeepers apiary summer winter food
""")

HOUSEPLANTS = wordset("""
plant plants houseplant houseplants pot pots potting soil water watering light sunlight window
leaf leaves root roots drain drainage repot repotting fertilizer fertilize humidity mist pest pests
prune pruning grow growing indoor indoors succulent succulents cactus fern ferns temperature
""")

ENERGY = wordset("""
energy electricity electric power heat heating heater cooling cool air conditioning thermostat
insulation insulate insulated window windows door doors draft drafts draught seal seals sealing
caulk weatherstrip light lights lighting bulb bulbs led leds lamp appliance appliances fridge
refrigerator freezer dishwasher washer washing dryer dry drying oven stove microwave kettle
laptop computer tv television device devices charger standby plug plugs unplug switch outlet
strip water shower hot boiler tank temperature degrees solar panel panels sun sunlight curtain
curtains blinds shade home house room rooms bill bills meter usage consumption efficient
efficiency rating star kwh watt watts fan fans clothes laundry cold load loads timer smart
""")
ITALY_PLACES = wordset("""
rome roma florence firenze venice venezia milan milano naples napoli pisa siena lucca bologna
verona turin torino genoa genova amalfi positano sorrento capri pompeii herculaneum cinque terre
tuscany toscana umbria assisi orvieto perugia sicily sicilia palermo catania taormina sardinia
como lake garda dolomites bergamo padua padova ravenna rimini bari puglia apulia lecce matera
vatican colosseum pantheon forum trevi uffizi duomo ponte vecchio rialto murano burano
italy italian chianti san gimignano montepulciano portofino
| cinque terre; lake como; lake garda; st peter's; sistine chapel; leaning tower; spanish steps
| trevi fountain; roman forum; vatican city; amalfi coast; st mark's; grand canal; doge's palace
""")
ITALY_ACTIVITIES = JAPAN_ACTIVITIES - {"shinkansen", "ryokan", "onsen", "izakaya", "karaoke", "kimono",
                                       "geisha", "anime", "manga", "sushi", "ramen", "sake", "temple",
                                       "temples", "shrine", "shrines"} | wordset("""
church churches cathedral basilica piazza gelato pasta pizza wine vineyard vineyards gondola
ruins fountain gallery galleries villa coast""")

# --- Advice verbs and phrases (tips) -----------------------------------------------------------
ADVICE_VERBS = set("""add adjust build allow apply avoid buy check choose clean consider cover cut
decide dig do don't drain ensure feed fertilize fertilise fill find give grow harvest help keep
know label learn leave let limit look loosen make mix monitor move mulch offer pick pinch place
plan plant position pot protect provide prune put read reduce remember remove replace rinse
rotate save select set shade share sow space spray stake start stop store support switch take
test thin tie transplant try turn unplug use wait wash watch water wear weed install insulate
seal run lower raise open close dry hang fix replace upgrade schedule set""".split())
ADVICE_PHRASES = ("should", "make sure", "be sure", "avoid", "don't", "do not", "never", "always",
                  "try to", "try ", "it's best", "it is best", "it helps", "you can", "you'll want",
                  "consider", "remember to", "keep ", "it's important", "it is important", "aim for",
                  "is key", "is essential", "recommended", "need to", "needs to")

# --- The tasks -------------------------------------------------------------------------------
# (name, shape, language, task text, the shape's data)
TASKS = [
    ("astronomy", "glossary", "en",
     "Build a glossary of astronomy terms: one entry per term, with a one-sentence definition.",
     {"terms": ASTRONOMY}),
    ("shell", "list", "en", "List common Linux shell commands and what each does.",
     {"names": SHELL_COMMANDS}),
    ("tomatoes", "tips", "en", "Write practical tips for growing tomatoes at home, one tip per entry.",
     {"subject": TOMATO}),
    ("planets", "facts", "en", "Collect useful facts about the planets of the solar system.",
     {"subject": SOLAR}),
    ("lighthouse", "story", "en",
     "Write a short story about a lighthouse keeper, one paragraph per entry.", {"world": STORY}),
    ("japan", "plan", "en", "Plan a one-week trip to Japan, one day per entry.",
     {"places": JAPAN_PLACES, "activities": JAPAN_ACTIVITIES}),
    ("astronomie", "glossary", "de",
     "Erstelle ein Glossar der Astronomie-Begriffe: ein Eintrag pro Begriff, mit einer Definition in "
     "einem Satz.", {"terms": ASTRONOMY_DE}),
]
HELDOUT = [
    ("music", "glossary", "en",
     "Build a glossary of music theory terms: one entry per term, with a one-sentence definition.",
     {"terms": MUSIC}),
    ("energy", "tips", "en", "Write practical tips for saving energy at home, one tip per entry.",
     {"subject": ENERGY}),
    ("italy", "plan", "en", "Plan a five-day trip to Italy, one day per entry.",
     {"places": ITALY_PLACES, "activities": ITALY_ACTIVITIES}),
    ("bees", "facts", "en", "Collect interesting facts about honeybees.", {"subject": BEES}),
    ("houseplants", "tips", "en", "Give advice for keeping houseplants alive, one piece of advice per entry.",
     {"subject": HOUSEPLANTS}),
    ("dog", "story", "en",
     "Write a short story about a girl who finds a lost dog, one paragraph per entry.", {"world": DOG_STORY}),
]


def selected_tasks():
    """MODEL_CHECK_TASK_TEXT set: that one task as a user wrote it (named "own", in the language
    MODEL_CHECK_TASK_LANG, default "en"), of no shape the judge knows: its entries pass the rules
    across all shapes and are then left to a person to read. Else MODEL_CHECK_TASKS: unset or
    'default' the 7 tasks, 'heldout' the held-out 6, 'all' both; else a comma-separated list of
    task names."""
    own = os.environ.get("MODEL_CHECK_TASK_TEXT", "").strip()
    if own:
        return [("own", "unjudged", os.environ.get("MODEL_CHECK_TASK_LANG", "en").strip() or "en", own, {})]
    sel = os.environ.get("MODEL_CHECK_TASKS", "default").strip() or "default"
    if sel == "default":
        return list(TASKS)
    if sel == "heldout":
        return list(HELDOUT)
    if sel == "all":
        return TASKS + HELDOUT
    names = {n.strip() for n in sel.split(",")}
    return [t for t in TASKS + HELDOUT if t[0] in names]


# --- The judge ---------------------------------------------------------------------------------
SEPARATORS = re.compile(r"\s*(?::|\s[-–—]\s)\s*")
META = re.compile(r"\b(?:this|the|next|each|an?|one|per|every)\s+(?:tip|entry|entries|task|glossary)\b", re.I)
LABEL = re.compile(r"^\s*(?:\*\*)?(?:tip|day|paragraph|entry|fact|tag|schritt|absatz|eintrag)\s*\d+\s*"
                   r"(?:\*\*)?\s*[:.)-]\s*", re.I)


def norm(s):
    return " ".join(str(s).lower().split())


def split_entry(value):
    """(name, text) of "name: text" (or "name - text"), else ("", value)."""
    m = SEPARATORS.search(value)
    if not m or m.start() == 0:
        return "", value.strip()
    return value[: m.start()].strip(" *`'\"#-"), value[m.end():].strip()


DEFINES = re.compile(r"^(.{2,40}?)\s+(?:is|are|refers to|means|describes)\s+(.+)$", re.I | re.S)


def sentence_entry(value, shape, data):
    """(name, text) of an entry written as one sentence, as a person reads it: a glossary's
    "Nebula is a cloud of gas ..." names its term; a list's "pwd to show the working
    directory" its first word, when that is a real one of the kind. Else ("", value)."""
    value = value.strip()
    if shape == "glossary":
        m = DEFINES.match(value)
        return (m.group(1).strip(), m.group(2).strip()) if m else ("", value)
    first, _, rest = value.partition(" ")
    first = first.rstrip(",;")
    if first.lower().strip("`'\"") in data["names"] and rest:
        return first, rest.strip()
    return "", value


def forms(w):
    out = {w}
    for end, add in (("ies", "y"), ("es", ""), ("s", ""), ("ae", "a"), ("en", ""), ("e", "")):
        if w.endswith(end) and len(w) - len(end) >= 3:
            out.add(w[: len(w) - len(end)] + add)
    return out


def is_term(name, terms):
    ws = words(name.replace("-", " - ").replace("’", "'"))
    raw = norm(re.sub(r"[*`\"“”„]", "", name)).strip(" .")
    while ws and ws[0] in ("the", "a", "an", "der", "die", "das", "ein", "eine"):
        ws = ws[1:]
        raw = raw.split(" ", 1)[1] if " " in raw else raw
    if not ws:
        return False
    phrase = " ".join(w for w in ws if w != "-")
    cands = {phrase, raw, phrase.replace(" ", "-"), phrase.replace(" ", "")}
    if any(f in terms for c in cands for f in forms(c)):
        return True
    return len(ws) == 2 and any(f in terms for f in forms(ws[-1]))


def verb_like(ws):
    return any(w in FACT_VERBS or (len(w) > 4 and (w.endswith("ed") or (w.endswith("s") and not w.endswith("ss"))))
               for w in ws)


def shape_verdict(shape, lang, data, name, text, value):
    """(kept, why) by the shape's own rule."""
    ws = words(text)
    if shape == "glossary":
        if not name:
            return False, "no 'term: definition'"
        if not is_term(name, data["terms"]):
            return False, f"'{name[:40]}' is not a term of the domain"
        if len(ws) < 4:
            return False, "definition under 4 words"
        if norm(text).strip(" .") == norm(name):
            return False, "definition repeats the name"
        return True, "real term, a sentence"
    if shape == "list":
        first = words(name.replace("`", " ")) if name else []
        head = re.sub(r"[`'\"*]", "", name).strip().split()[0].lower() if name.strip() else ""
        if not name:
            return False, "no 'name: what it does'"
        if head not in data["names"] and not (first and first[0] in data["names"]):
            return False, f"'{name[:40]}' is not a real one of the kind"
        if len(ws) < 3:
            return False, "says under 3 words of what it does"
        return True, "real one, says what it does"
    body = LABEL.sub("", value).strip()
    bw = words(body)
    if shape == "tips":
        if len(bw) < 4:
            return False, "under 4 words"
        head, rest = split_entry(body)
        if head and len(words(rest)) < 3:
            return False, f"'{head[:30]}' heads a text of under 3 words"
        lowered = " " + norm(body) + " "
        starts = words(LABEL.sub("", text if name else body))[:1]
        advice = (bw[0] in ADVICE_VERBS or (starts and starts[0] in ADVICE_VERBS)
                  or any(p in lowered for p in ADVICE_PHRASES))
        if not advice:
            return False, "does not tell what to do"
        if not any(f in data["subject"] for w in bw for f in forms(w)):
            return False, "not about the subject"
        return True, "tells what to do, on the subject"
    if shape == "facts":
        if len(bw) < 5:
            return False, "under 5 words"
        if name and len(words(name)) <= 3 and not any(f in data["subject"] for w in words(name) for f in forms(w)):
            return False, f"defines '{name[:30]}', not of the subject"
        if not any(f in data["subject"] for w in bw for f in forms(w)):
            return False, "does not name the subject"
        if not verb_like(bw):
            return False, "no verb: states nothing"
        return True, "states something about the subject"
    if shape == "story":
        if len(bw) < 8:
            return False, "under 8 words"
        if not any(f in data["world"] for w in bw for f in forms(w)):
            return False, "not of the story's world"
        return True, "moves the story on"
    if shape == "plan":
        if len(bw) < 4:
            return False, "under 4 words"
        low = norm(body)
        places = [p for p in data["places"] if (" " in p and p in low)] or \
                 [w for w in bw if w in data["places"] and w not in ("japan", "japanese", "italy", "italian")]
        acts = [w for w in bw if any(f in data["activities"] for f in forms(w))]
        if not places and not acts:
            return False, "names no place or activity"
        return True, "names " + ("a place" if places else "an activity")
    if shape == "unjudged":
        return None, "not judged: a person reads it"
    return False, f"unknown shape {shape}"


def judge(entries, task, prompt_texts=()):
    """Verdicts for `entries` [(key, value)] of `task` (a TASKS row), in order: a list of
    (key, value, kept, why, doubt). Doubt entries (tag `doubt`) get kept=None."""
    _, shape, lang, text, data = task
    prompts = [t for t in {norm(t) for t in list(prompt_texts) + [text]} if len(t) >= 8]
    whole = "\n".join(prompts)
    near = 0.6 if shape in ("story", "plan") else 0.8
    seen_bodies, seen_names, out = [], set(), []
    for key, value in entries:
        value = str(value)
        tags = {t.strip() for t in key.split(",")}
        if "doubt" in tags:
            out.append((key, value, None, "doubted by the agent", True))
            continue
        v = norm(value)
        name, body = split_entry(value)
        if not name and shape in ("glossary", "list"):
            name, body = sentence_entry(value, shape, data)
        if shape in ("tips", "facts", "story", "plan"):
            body = LABEL.sub("", value).strip()
        verdict = None
        if not v or v in whole or any(difflib.SequenceMatcher(None, v, t).ratio() >= 0.8 for t in prompts):
            verdict = (False, "a copy of the prompt or task text")
        if verdict is None:
            why = language_problem(body if body else value, lang)
            rest = split_entry(LABEL.sub("", value))[1]
            if not why and rest != body and len(words(rest)) >= 3:
                why = language_problem(rest, lang)
            if why:
                verdict = (False, why)
        if verdict is None:
            nb = norm(LABEL.sub("", body))
            for earlier in seen_bodies:
                m = difflib.SequenceMatcher(None, nb, earlier)
                if m.real_quick_ratio() >= near and m.quick_ratio() >= near and m.ratio() >= near:
                    verdict = (False, f"near-copy of an earlier entry (ratio {m.ratio():.2f})")
                    break
            if verdict is None and shape in ("glossary", "list") and name and norm(name) in seen_names:
                verdict = (False, "same name as an earlier entry")
        if verdict is None and name:
            known = set().union(*(v for v in data.values() if isinstance(v, set)))
            glued = [w for w in words(name) if len(w) >= 12 and w not in known]
            if glued:
                verdict = (False, f"its head has a run-together or made-up word '{glued[0][:30]}'")
        if verdict is None and META.search(body if name and shape in ("glossary", "list") else LABEL.sub("", value)):
            verdict = (False, "talks about the task, not its subject")
        if verdict is None:
            verdict = shape_verdict(shape, lang, data, name, body, value)
        seen_bodies.append(norm(LABEL.sub("", body)))
        if name:
            seen_names.add(norm(name))
        out.append((key, value, verdict[0], verdict[1], False))
    return out
