#!/usr/bin/env python3
"""Generate bert-train's demo corpus: short encyclopedia-style articles about invented towns,
people, rivers and animals, written for this project (no third-party text).

Output is Google's pretraining text format: one sentence per line, a blank line between
documents. Facts inside one article agree with each other, so both the masked-LM task
(templates, agreement, recurring names) and next-sentence prediction (topic continuity) are
learnable. Deterministic for a given --seed.

  python3 scripts/demo/make_corpus.py --seed 1 --documents 600 > scripts/demo/corpus.txt
"""
import argparse
import random

ONSETS = ["b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "l", "m", "n", "p", "r", "s", "st", "t", "tr", "v", "w", "z"]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ei", "ou", "ia"]
CODAS = ["", "", "n", "r", "l", "s", "th", "m", "nd", "rk"]

REGIONS = ["the northern hills", "the eastern plain", "the western coast", "the southern valley", "the central lowlands", "the lake district"]
INDUSTRIES = ["fishing", "farming", "weaving", "mining", "shipbuilding", "pottery", "brewing", "timber", "printing", "glassmaking"]
LANDMARKS = ["an old stone bridge", "a tall clock tower", "a ruined castle", "a covered market", "a large cathedral", "a public library", "a lighthouse", "a botanical garden"]
FIELDS = {
    "chemistry": ["salts", "metals", "acids", "crystals"],
    "astronomy": ["comets", "the moon", "double stars", "the planets"],
    "botany": ["mosses", "wild roses", "ferns", "grasses"],
    "music": ["string quartets", "choral songs", "symphonies", "folk dances"],
    "medicine": ["fevers", "the heart", "the lungs", "infections"],
    "geology": ["volcanoes", "glaciers", "fossils", "caves"],
}
SEAS = ["the Grey Sea", "the Amber Sea", "the Northern Ocean", "the Bay of Storms", "the Quiet Gulf"]
HABITATS = ["forests", "wetlands", "mountain slopes", "grasslands", "river banks", "coastal cliffs"]
DIETS = {"insects": "insectivore", "seeds": "seed eater", "fish": "fish eater", "leaves": "herbivore", "small mammals": "predator"}
COLOURS = ["brown", "grey", "black", "red", "golden", "white", "green"]
ANIMALS = ["bird", "frog", "lizard", "deer", "fox", "beetle", "owl", "otter"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]


def name(rng, parts=(2, 3)):
    n = rng.randint(*parts)
    s = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(n))
    return s.capitalize()


def town_article(rng, world):
    t = name(rng)
    region = rng.choice(REGIONS)
    river = rng.choice(world["rivers"])
    pop = rng.randint(2, 950) * 100
    founded = rng.randint(900, 1800)
    industry = rng.choice(INDUSTRIES)
    industry2 = rng.choice([i for i in INDUSTRIES if i != industry])
    landmark = rng.choice(LANDMARKS)
    twin = rng.choice(world["towns"]) if world["towns"] else name(rng)
    s = [
        f"{t} is a town in {region}.",
        f"It lies on the river {river}, about {rng.randint(3, 90)} kilometres from the sea.",
        f"The town was founded in {founded} as a small {rng.choice(['market', 'harbour', 'mill', 'mining'])} settlement.",
        f"In the last census {t} had a population of {pop}.",
        f"The main industry of {t} is {industry}, and {industry2} is also important.",
        f"The town is known for {landmark}, which was built in {founded + rng.randint(20, 300)}.",
        f"Every {rng.choice(MONTHS)} the people of {t} hold a festival on the banks of the {river}.",
        f"{t} has a railway station on the line to {twin}.",
        f"The town council of {t} has {rng.choice([7, 9, 11, 13, 15])} members.",
        f"Since {rng.randint(1950, 2015)}, {t} has been twinned with {twin}.",
        f"Many families in {t} still work in {industry}.",
        f"The climate of {region} is {rng.choice(['mild and wet', 'cold in winter', 'warm and dry', 'windy'])}, so the harvest in {t} is often {rng.choice(['late', 'early', 'small', 'large'])}.",
    ]
    world["towns"].append(t)
    return s[:2] + rng.sample(s[2:], rng.randint(5, len(s) - 2))


def person_article(rng, world):
    first, last = name(rng, (1, 2)), name(rng)
    field = rng.choice(list(FIELDS))
    topic = rng.choice(FIELDS[field])
    born = rng.randint(1700, 1950)
    died = born + rng.randint(35, 95)
    town = rng.choice(world["towns"]) if world["towns"] else name(rng)
    he = rng.choice(["he", "she"])
    his = "his" if he == "he" else "her"
    s = [
        f"{first} {last} ({born} to {died}) was a scientist who worked in {field}.",
        f"{he.capitalize()} was born in the town of {town}.",
        f"{he.capitalize()} studied {field} at the university of {rng.choice(world['towns'] or [name(rng)])}.",
        f"{last} is best known for {his} work on {topic}.",
        f"In {born + rng.randint(22, 40)} {last} published a book about {topic}.",
        f"The book made {last} famous in the field of {field}.",
        f"Later {he} became a professor of {field}.",
        f"{last} taught many students, and several of them also studied {topic}.",
        f"{he.capitalize()} died in {died} in {town}.",
        f"A street in {town} is named after {first} {last}.",
        f"{his.capitalize()} notes on {topic} are kept in the library of {town}.",
    ]
    return s[:2] + sorted(rng.sample(s[2:-2], rng.randint(4, 7)), key=s.index) + s[-2:][: rng.randint(1, 2)]


def river_article(rng, world):
    r = name(rng)
    length = rng.randint(20, 1200)
    sea = rng.choice(SEAS)
    mountain = name(rng)
    towns = rng.sample(world["towns"], min(3, len(world["towns"]))) if world["towns"] else [name(rng)]
    s = [
        f"The {r} is a river in {rng.choice(REGIONS)}.",
        f"It is {length} kilometres long and flows into {sea}.",
        f"The source of the {r} is on the slopes of mount {mountain}.",
        f"The river passes the towns of {', '.join(towns)}." if len(towns) > 1 else f"The river passes the town of {towns[0]}.",
        f"In spring the {r} often floods after the snow melts on mount {mountain}.",
        f"Boats carry {rng.choice(['timber', 'grain', 'coal', 'stone', 'wool'])} down the {r} to {sea}.",
        f"The water of the {r} is {rng.choice(['clear', 'brown', 'cold', 'fast'])} in its upper course.",
        f"Many kinds of fish live in the {r}.",
        f"A dam was built on the {r} in {rng.randint(1890, 1990)}.",
    ]
    world["rivers"].append(r)
    return s[:2] + rng.sample(s[2:], rng.randint(4, len(s) - 2))


def animal_article(rng, world):
    a = name(rng)
    kind = rng.choice(ANIMALS)
    food = rng.choice(list(DIETS))
    colour = rng.choice(COLOURS)
    habitat = rng.choice(HABITATS)
    s = [
        f"The {a} {kind} is a small animal that lives in {habitat}.",
        f"It is {colour} with {rng.choice(COLOURS)} marks on its back.",
        f"The {a} {kind} eats mostly {food}, so it is {'an' if DIETS[food][0] in 'aeiou' else 'a'} {DIETS[food]}.",
        f"An adult {a} {kind} is about {rng.randint(3, 80)} centimetres long.",
        f"It is most active at {rng.choice(['night', 'dawn', 'dusk', 'midday'])}.",
        f"The {a} {kind} was first described by a scientist from {rng.choice(world['towns'] or [name(rng)])}.",
        f"In winter the {a} {kind} {rng.choice(['sleeps in a burrow', 'moves to warmer places', 'grows a thicker coat', 'hides under leaves'])}.",
        f"The female lays {rng.randint(2, 12)} eggs in {rng.choice(MONTHS)}.",
        f"The {a} {kind} is now rare because its {habitat} are disappearing.",
    ]
    return s[:3] + rng.sample(s[3:], rng.randint(3, len(s) - 3))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--documents", type=int, default=600)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    world = {"towns": [], "rivers": [name(rng) for _ in range(8)]}
    makers = [town_article, town_article, person_article, river_article, animal_article]
    out = []
    for _ in range(args.documents):
        out.append("\n".join(rng.choice(makers)(rng, world)))
    print("\n\n".join(out))


if __name__ == "__main__":
    main()
