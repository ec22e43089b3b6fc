"""B7's English corpus data (see :mod:`benchmarks.b7.specs` for the template rules)."""

from __future__ import annotations

import calendar

from benchmarks.b7.replies import EN_REPLIES
from benchmarks.b7.specs import FactSpec, Language, MultiSpec

__all__ = ["ENGLISH"]


def _w(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


POOLS: dict[str, tuple[str, ...]] = {
    "relative": _w("sister, brother, cousin, aunt, uncle, niece"),
    "person": _w(
        "Lena, Marco, Priya, Tomas, Aiko, Farid, Greta, Jonas, Noor, Rafael, Sofia, Yusuf, "
        "Elif, Mateo, Ingrid, Kwame, Dalia, Oskar, Hana, Bruno"
    ),
    "city": _w(
        "Porto, Lyon, Valencia, Krakow, Tallinn, Bologna, Ghent, Bergen, Seville, Ljubljana, "
        "Graz, Leeds, Aarhus, Brno"
    ),
    "season": _w("spring, summer, autumn, winter"),
    "child": _w("daughter, son"),
    "school": _w(
        "Maple Grove, Oak Hill, Linden Park, Hawthorn, Brookfield, Cedar Lane, Willow Bank, "
        "Elmwood, Northgate, Ashford"
    ),
    "allergen": _w("shellfish, peanuts, sesame, kiwi, penicillin, latex, walnuts, celery"),
    "car": _w(
        "Skoda Octavia, Toyota Corolla, Volvo V60, Mazda CX-5, Honda Jazz, Kia Ceed, "
        "Renault Clio, Subaru Outback"
    ),
    "color": _w("red, blue, silver, white, grey, green, black"),
    "company": _w(
        "Nordlicht Labs, Bluefin Analytics, Kestrel Systems, Quartzline, Harbor Robotics, "
        "Pinecrest Software, Lumen Freight, Tidewater Health"
    ),
    "role": _w("data engineer, product designer, backend developer, QA analyst"),
    "pet_kind": _w("beagle, tabby cat, border collie, rabbit, labrador, parrot"),
    "pet": _w("Biscuit, Pepper, Mochi, Waffles, Juniper, Pickle, Noodle, Clementine, Ziggy"),
    "instrument": _w("piano, cello, guitar, violin, saxophone, flute"),
    "surname": _w("Okafor, Lindqvist, Moreau, Castellanos, Brennan, Horvath, Takeda, Varga"),
    "amonth": _w("January, February, March, April, July, August, December"),
    "aday": tuple(str(d) for d in range(3, 28)),
    "venue": _w("lakeside chapel, old town hall, harbour pavilion, vineyard estate"),
    "med": _w("amlodipine, lisinopril, ramipril, losartan, bisoprolol, valsartan, nifedipine"),
    "dest": _w("Iceland, Portugal, Japan, Morocco, Norway, Vietnam, Chile, Scotland, Croatia"),
    "sight": _w("northern lights, old monasteries, cherry blossoms, desert dunes, rice terraces"),
    "tmonth": _w("May, June, September, October, November"),
    "project": _w("canoe, workbench, birdhouse, rocking chair, treehouse, toy chest"),
    "course": _w("Spanish, statistics, accounting, photography, Italian, German"),
    "grade": _w("a B plus, distinction, ninety-one percent, an A minus"),
    "race": _w("Lakeshore, Harbour Lights, Midsummer, Foxhill, Seaview, Stonebridge"),
    "rtime": _w("1:52, 2:05, 1:47, 2:11, 1:58"),
    "dish": _w("lentil soup, mushroom risotto, pad thai, shakshuka, dumplings, chili"),
    "movie": _w("a slow Danish drama, an old western, a space thriller, a silly comedy"),
    "weekday": _w("Monday, Tuesday, Wednesday, Friday"),
    "book": _w("a detective novel, a history of maps, a memoir, a sci-fi trilogy"),
    "sport": _w("yoga, swimming, climbing, badminton"),
    # answers of the reply facts: pools of their own (no ``any_`` field draws from them)
    "novel": _w("Middlemarch, The Hobbit, Moby-Dick, Rebecca, Dracula, Walden, Beloved, Ulysses"),
    "gift": _w(
        "leather journal, pasta maker, telescope, pottery class, hammock, espresso grinder, "
        "chess set, bonsai tree"
    ),
    "roast": _w("roast duck, lamb tagine, grilled salmon, beef bourguignon, mushroom pie"),
    "wine": _w("Rioja, Riesling, Barolo, Sancerre, Malbec, Chianti, Beaujolais"),
    "plant": _w("pothos, aspidistra, philodendron, calathea, aglaonema, peperomia, monstera"),
}

FACTS = (
    FactSpec(
        "relative_city",
        {"rel": "relative", "name": "person", "city": "city", "season": "season"},
        ("city",),
        (
            "By the way, my {rel} {name} moved to {city} last {season} and already found a "
            "flat near the river.",
            "Big family news: my {rel} {name} relocated to {city} in the {season}, new job "
            "and everything.",
        ),
        ("Where did my {rel} {name} move last {season}?",),
        ("Which city is {name} living in these days?", "What town does {name} call home now?"),
        (
            "My {rel} keeps asking when I will visit, I really should plan something.",
            "{name} called last night, we talked for an hour about nothing in particular.",
            "We finally moved the bookshelf into the hallway, the living room feels bigger.",
            "A friend is thinking about moving abroad, any tips on finding a flat in a new city?",
        ),
        "Family news",
        repeat=2,
    ),
    FactSpec(
        "child_school",
        {"child": "child", "kid": "person", "school": "school"},
        ("school",),
        (
            "My {child} {kid} started first grade at {school} Primary in September, the "
            "teacher seems lovely.",
            "{kid} started school this autumn: my {child} goes to {school} Primary now and "
            "loves the playground.",
        ),
        ("Which primary school did my {child} {kid} start at?",),
        ("Where does {kid} go for lessons every weekday?", "Which campus does {kid} attend?"),
        (
            "My {child} wants a birthday party with a magician this year.",
            "Parent evening at school got moved to Thursday, so annoying.",
            "{kid} lost another glove on the way home, third one this winter.",
        ),
        "School start",
        repeat=2,
    ),
    FactSpec(
        "allergy",
        {"allergen": "allergen"},
        ("allergen",),
        (
            "Turns out I'm allergic to {allergen}, the doctor confirmed it after the skin test "
            "on Monday.",
            "Got the skin test results back: definitely an allergy to {allergen}, the doctor "
            "said to carry antihistamines.",
        ),
        ("What did the skin test say I'm allergic to?",),
        (
            "What did the doctor tell me to avoid?",
            "Which thing triggers my reaction, per the doctor?",
        ),
        (
            "The doctor wants me to come back for a blood test in two weeks.",
            "My skin is so dry lately, maybe I need a different soap.",
            "My coworker had an allergic reaction to a bee sting at the picnic.",
        ),
        "Doctor visit",
    ),
    FactSpec(
        "car",
        {"color": "color", "car": "car"},
        ("car",),
        (
            "We finally bought a car from the dealer: a {color} {car}, used, with surprisingly "
            "low mileage.",
            "The new family car is a {color} {car}; we bought it used from a dealer outside town.",
        ),
        ("What car did we buy, the {color} one?",),
        ("Which model is our used vehicle?", "What brand of auto did we get from the dealer?"),
        (
            "The car wash on the corner raised its prices again.",
            "We rented a {color} van for the weekend, it drove fine.",
            "Parking near the office is a nightmare, I should buy a monthly pass.",
        ),
        "New car",
    ),
    FactSpec(
        "job",
        {"company": "company", "role": "role"},
        ("company",),
        (
            "I accepted the job offer from {company}! I'll start as a {role} on their platform "
            "team next month.",
            "Signed the contract with {company} today, so I'm joining their platform team as "
            "a {role}.",
        ),
        ("Which company did I join as a {role}?",),
        (
            "Who is my new employer on the platform team?",
            "Where do I work since I switched careers, the platform group?",
        ),
        (
            "Our platform team at work had a long retro today, nothing decided.",
            "A recruiter offered me a {role} role at some startup, I ignored it.",
            "I need to update my CV before the job fair.",
        ),
        "Career",
    ),
    FactSpec(
        "pet",
        {"kind": "pet_kind", "pet": "pet"},
        ("pet",),
        (
            "We adopted a {kind} from the animal shelter this weekend and named it {pet}.",
            "Meet the newest family member: a {kind} from the animal shelter, we call it {pet}.",
        ),
        ("What did we name the {kind} from the shelter?",),
        ("What's our rescue animal called?", "What name did the {kind} we took home get?"),
        (
            "The shelter near the station is looking for volunteers on Sundays.",
            "My neighbour's {kind} barks every morning at six.",
            "We named the new wifi network after a cartoon character, very mature.",
        ),
        "New pet",
    ),
    FactSpec(
        "instrument",
        {"instrument": "instrument", "surname": "surname"},
        ("surname",),
        (
            "I signed up for {instrument} lessons on Thursdays; the teacher is Mr. {surname}, "
            "very patient.",
            "Started {instrument} lessons! My teacher, Ms. {surname}, says I have decent rhythm "
            "for a beginner.",
        ),
        ("Who teaches my {instrument} lessons?",),
        (
            "Who is the tutor for my {instrument} class?",
            "Who gives me {instrument} practice as a newcomer?",
        ),
        (
            "I listened to a great {instrument} concert on the radio last night.",
            "Our {instrument} teacher at school was terrifying, I still remember her.",
            "Thursdays are so packed, I need to move something.",
        ),
        "Music lessons",
        repeat=2,
    ),
    FactSpec(
        "anniversary",
        {"amonth": "amonth", "aday": "aday", "venue": "venue"},
        ("amonth",),
        (
            "Note to self: our wedding anniversary is {amonth} {aday}, we got married at the "
            "{venue}.",
            "Our wedding was on {amonth} {aday} at the {venue}; we married young and I want "
            "something special for the anniversary.",
        ),
        ("When is our wedding anniversary?",),
        ("What day did we get married?", "When should I celebrate being married to my spouse?"),
        (
            "My friends' wedding is next month and I still have nothing to wear.",
            "Anniversary sale at the furniture store this weekend, might go.",
            "My parents got married young too, they met at university.",
        ),
        "Anniversary",
    ),
    FactSpec(
        "medication",
        {"med": "med"},
        ("med",),
        (
            "The doctor put me on {med} for my blood pressure, one pill every morning.",
            "New prescription from the doctor: {med}, to bring my blood pressure down; I take "
            "it each morning with breakfast.",
        ),
        ("What blood pressure medication did the doctor put me on?",),
        (
            "What do I swallow every morning for hypertension?",
            "Which tablets do I need every morning?",
        ),
        (
            "My blood test came back fine, the doctor was happy.",
            "I keep forgetting to take my vitamins in the morning.",
            "The pharmacy on the corner closes early on Saturdays now.",
        ),
        "Prescription",
    ),
    FactSpec(
        "trip",
        {"dest": "dest", "sight": "sight", "tmonth": "tmonth"},
        ("dest",),
        (
            "We booked flights to {dest} for {tmonth}, a ten-day trip to finally see the {sight}.",
            "Our {tmonth} trip is set: {dest}, ten days, and the main goal is the {sight}.",
        ),
        ("Where is our {tmonth} trip going?",),
        (
            "Which country is our upcoming vacation in, the one with the {sight}?",
            "Which country has the {sight} we want to visit?",
        ),
        (
            "A colleague just came back from a trip and won't stop talking about it.",
            "Flights are so expensive this {tmonth}, maybe we should take the train.",
            "I watched a documentary about the {sight}, stunning footage.",
        ),
        "Travel plans",
        repeat=2,
    ),
)

MULTIS = (
    MultiSpec(
        "moves_twice",
        {"rel": "relative", "name": "person", "city": "city", "city2": "city"},
        ("My {rel} {name} is moving to {city} for a new job, leaving in a few weeks.",),
        ("{name} is on the move again, this time to {city2}; the winters were too much.",),
        ("city", "city2"),
        (
            "Which places has my {rel} {name} lived in after leaving home?",
            "Where has my {rel} {name} moved over the years?",
        ),
        ("Family", "Catching up"),
    ),
    MultiSpec(
        "project",
        {"project": "project"},
        ("I started building a {project} in the garage, bought a proper saw for it.",),
        ("The {project} is finally done! Sanded it twice and gave it two coats of varnish.",),
        ("project",),
        ("What happened with the {project} I was building?",),
        ("Weekend project", "Done!"),
    ),
    MultiSpec(
        "course",
        {"course": "course", "grade": "grade"},
        ("I enrolled in an evening {course} course at the community college, twice a week.",),
        ("Passed the {course} exam with {grade}! All those evening classes paid off.",),
        ("course",),
        ("How did my {course} studies at college go in the end?",),
        ("Evening classes", "Exam results"),
    ),
    MultiSpec(
        "race",
        {"race": "race", "rtime": "rtime"},
        ("Registered for the {race} half marathon, now I actually have to train.",),
        ("Finished the {race} in {rtime}, legs destroyed but so happy.",),
        ("race",),
        ("How did the {race} half marathon I signed up for go?",),
        ("Running", "Race day"),
    ),
)

TOPICS = _w("heater, fridge, printer, bicycle, dishwasher, boiler, scooter, doorbell")
TOPIC_EVENTS = (
    "The {noun} acted up again today, I need to deal with it.",
    "Finally sorted out the {noun}: the repair guy spent two hours on it.",
    "I'm thinking of replacing the {noun} altogether, the costs keep adding up.",
    "Good news about the {noun}: it works perfectly since the fix.",
    "Spent the whole Saturday on the {noun}, filthy job but done.",
)
TEMPORAL_QUESTIONS = {
    "window": "What did I say about the {noun} in {when}?",
    "before": "What was the first thing I told you about the {noun}, before {when}?",
    "after": "Any news about the {noun} since {when}?",
}

STOP_WORDS = frozenset(
    _w(
        "a, about, after, again, all, am, an, and, any, are, as, at, be, been, before, being, "
        "but, by, can, could, did, do, does, for, from, get, go, had, has, have, how, i, i'm, "
        "in, is, it, its, me, much, my, now, of, on, or, our, per, say, said, should, since, "
        "so, tell, that, the, their, there, these, they, this, to, told, up, us, was, we, were, "
        "what, what's, when, where, which, who, why, will, with, you, your"
    )
)

FILLER_USER = (
    "Can you suggest something quick for dinner? I have rice, eggs and some spinach.",
    "I'm making {any_dish} tonight, how long should it simmer?",
    "We watched {any_movie} yesterday, surprisingly good.",
    "Help me word an email to my manager asking to move the {any_weekday} meeting.",
    "I'm reading {any_book} at the moment, slow start but it gets better.",
    "What's a good stretching routine after {any_sport}?",
    "Remind me how to convert cups to grams for flour.",
    "The weather has been grey all week, I miss the sun.",
    "Can you summarise the pros and cons of renting versus buying?",
    "I need a packing list for a two-day conference.",
    "Our team is migrating the billing service, any advice on cutover plans?",
    "How do I politely decline a wedding invitation?",
    "What are some good questions to ask at a parent-teacher meeting?",
    "I started {any_sport} classes on {any_weekday}, my shoulders hurt already.",
    "Give me three ideas for a rainy Sunday afternoon.",
    "Is it better to pay off a loan early or invest the money?",
    "Write a short thank-you note for my neighbours who watered the plants.",
    "I cooked {any_dish} for friends and it disappeared in minutes.",
    "Could you explain what an index fund is in simple words?",
    "I keep waking up at 5 am, any tips for sleeping longer?",
    "What should I bring to a potluck, something vegetarian?",
    "Draft a polite reminder about an unpaid invoice.",
    "We are repainting the hallway, which shade of off-white is least boring?",
    "How many steps a day is actually healthy?",
)
FILLER_ASSISTANT = (
    "Sure, here is a simple approach you could try.",
    "That sounds like a good plan. Do you want me to break it into steps?",
    "Here are a few options, from quickest to most involved.",
    "Good question. The short answer is: it depends on your priorities.",
    "Happy to help. Here's a draft you can adjust.",
    "A couple of things to keep in mind before you decide.",
    "That's a common problem; most people find a routine helps.",
    "Here's a short list to get you started.",
    "Nice! Let me know how it turns out.",
    "I'd start small and see how it feels after a week.",
)
ACKS = (
    "Thanks for telling me, I'll keep that in mind.",
    "Oh, that's a big step! How do you feel about it?",
    "Good to know. Is there anything you want to plan around it?",
    "Noted. Let me know if you want help with anything related.",
    "That sounds exciting, congratulations!",
    "Got it. Anything else on your mind today?",
)
FILLER_TITLES = _w(
    "Dinner ideas, Quick question, Work email, Weekend, Reading, Planning, Money, Health, "
    "Home, Misc"
)


def _month(year: int, month: int) -> str:
    return f"{calendar.month_name[month]} {year}"


ENGLISH = Language(
    code="en",
    pools=POOLS,
    facts=FACTS,
    multis=MULTIS,
    replies=EN_REPLIES,
    topics=TOPICS,
    topic_events=TOPIC_EVENTS,
    temporal_questions=TEMPORAL_QUESTIONS,
    month_phrase=_month,
    stop_words=STOP_WORDS,
    filler_user=FILLER_USER,
    filler_assistant=FILLER_ASSISTANT,
    acks=ACKS,
    filler_titles=FILLER_TITLES,
    segmented=False,
)
