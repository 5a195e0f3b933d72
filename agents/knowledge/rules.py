"""`RuleExtractor`: the offline twin of the model-backed extractor, in English and Indonesian.

It reads only the person's own messages (agents' replies say nothing new about the
person) and recognises a deliberately small set of statements, each a rule a test can
name: favourites, likes and dislikes, switching a favourite, the people in their life
and how they relate, where they live or work, allergies and birthdays. Questions are
never read as statements ("what's my favourite food?" teaches nothing).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from agents.knowledge.extraction import NAME_CHARS_MAX, SELF, Claim, Extraction, Mention
from agents.knowledge.port import EntityType, KnowledgeMessage

_WORDS_MAX = 5


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_CLAUSE = re.compile(r"[^.!?;\n]+[.!?;\n]*")
_OBJECT_END = re.compile(
    r"\s*(?:,|\(|:| and | but | because | since | so | which | who | dan | tapi | karena | soalnya | terus | yang )",
    re.IGNORECASE,
)
# Where a list of things ends, and what separates its items.
_LIST_END = re.compile(
    r"\s*(?:\(|:| but | because | since | so | which | who | tapi | karena | soalnya | terus | yang )", re.IGNORECASE
)
_LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and |dan |or |atau )?|\s+(?:and|dan|or|atau|&)\s+", re.IGNORECASE)
_ITEMS_MAX = 5
_FILLERS = (
    "actually",
    "now",
    "though",
    "too",
    "a lot",
    "so much",
    "very much",
    "really",
    "anymore",
    "these days",
    "lately",
    "sekarang",
    "deh",
    "sih",
    "ya",
    "lho",
    "kok",
    "banget",
    "dong",
    "juga",
    "aja",
    "saja",
    "kayaknya",
)
_NOT_OBJECTS = _words(
    """it that this them him her you me us there here to what which something anything nothing
    home night nights weekends moment least first last times all both everything everyone
    itu ini dia kamu apa siapa rumah kantor sini situ mana semua"""
)
_QUESTION_START = re.compile(
    r"^(?:what|who|where|when|which|why|how|do|does|did|is|are|can|could|apa|siapa|dimana|di mana|kapan|kenapa|"
    r"gimana|bagaimana|berapa)\b",
    re.IGNORECASE,
)
_FOODS = _words(
    """rendang soto sate satay bakso nasi goreng gado-gado gado mie mi ayam pizza sushi burger pasta ramen
    durian coffee kopi tea teh chocolate cokelat coklat martabak pempek rawon gudeg tempe tahu tofu rice noodles
    noodle chicken beef fish ikan seafood shrimp udang peanuts peanut kacang milk susu eggs egg telur cheese keju
    bread roti cake kue ice cream es krim spicy pedas curry kari salad steak dumplings dimsum bubur lontong
    ketoprak pecel uduk padang"""
)
_FOOD_CATEGORIES = _words(
    """food dish meal snack drink beverage dessert cuisine makanan minuman cemilan camilan jajanan
    masakan eat"""
)
_PLACE_CATEGORIES = _words("place city restaurant country beach cafe café spot tempat kota restoran negara pantai")
_CATEGORY_ID = {
    "makanan": "food",
    "masakan": "food",
    "minuman": "drink",
    "cemilan": "snack",
    "camilan": "snack",
    "jajanan": "snack",
    "lagu": "song",
    "film": "film",
    "tempat": "place",
    "kota": "city",
    "warna": "colour",
    "buku": "book",
    "band": "band",
    "olahraga": "sport",
    "penyanyi": "singer",
}
_RELATIONS = {
    # English
    "mom": "mother",
    "mum": "mother",
    "dad": "father",
    # Indonesian
    "istri": "wife",
    "suami": "husband",
    "pacar": "partner",
    "adik": "younger sibling",
    "kakak": "older sibling",
    "ibu": "mother",
    "mama": "mother",
    "ayah": "father",
    "bapak": "father",
    "papa": "father",
    "anak": "child",
    "teman": "friend",
    "temen": "friend",
    "sahabat": "best friend",
    "bos": "boss",
    "atasan": "boss",
    "rekan kerja": "colleague",
    "sepupu": "cousin",
}
# Relations a person has one of at a time: a new one replaces the old.
_EXCLUSIVE_RELATIONS = frozenset({"wife", "husband", "partner", "girlfriend", "boyfriend", "mother", "father", "boss"})
_REL_EN = (
    r"wife|husband|partner|girlfriend|boyfriend|sister|brother|mother|mom|mum|father|dad|son|daughter|best friend|"
    r"friend|boss|colleague|cousin|aunt|uncle|grandmother|grandma|grandfather|grandpa|neighbour|neighbor|roommate"
)
_REL_ID = (
    r"istri|suami|pacar|adik|kakak|ibu|ayah|bapak|mama|papa|anak|teman|temen|sahabat|bos|atasan|rekan kerja|sepupu"
)
_NAME = r"(?P<name>[A-Z][\w'-]{1,30}(?: [A-Z][\w'-]{1,30})?)"
_I = r"(?:i|aku|saya|gue|gw|gua)"
_ME_ID = r"(?:aku|saya|gue|gw|gua)"
_MY_ID = r"(?:ku| saya| aku| gue| gw)"
_NOT_NAMES = _words("is the a an my very not so just also really")


def _f(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


_FAVOURITE = [
    _f(
        r"\bmy (?:all[- ]time |absolute )?favou?rite (?P<cat>[a-z]+(?: [a-z]+){0,2}?) "
        r"(?:is|was|has to be|=) (?P<obj>.+)"
    ),
    _f(r"^(?P<obj>.+?) (?:is|are) (?:definitely |still )?my (?:all[- ]time )?favou?rite (?P<cat>[a-z]+)"),
    # No category named: only a known food says what kind of favourite it is.
    _f(r"\bmy (?:all[- ]time |absolute )?favou?rite (?P<cat>)(?:is|has to be) (?P<obj>.+)"),
    _f(
        rf"\b(?P<cat>[a-z]+) (?:favorit|favorite|favourite|kesukaan){_MY_ID}(?: sekarang)? "
        r"(?:adalah |itu |ya |tuh )?(?P<obj>.+)"
    ),
    _f(
        r"^(?P<obj>.+?) (?:adalah |itu |tuh )?(?P<cat>makanan|minuman|lagu|film|tempat|warna|buku) "
        rf"(?:favorit|kesukaan){_MY_ID}"
    ),
]
_SWITCH = [
    _f(r"\b(?:i've|i have|i)\s+(?:now\s+|just\s+)?(?:switched|moved on|changed|gone over) (?:over )?to (?P<obj>.+)"),
    _f(r"\bnow (?:i prefer|i'm into|i am into|it's|it is) (?P<obj>.+)"),
    _f(r"\bi prefer (?P<obj>.+?) now\b"),
    _f(rf"\b{_ME_ID} (?:udah |sudah |sekarang )?(?:ganti|beralih) (?:ke )?(?P<obj>.+)"),
    _f(rf"\bsekarang {_ME_ID} lebih suka (?P<obj>.+)"),
    _f(rf"\b{_ME_ID} (?:sekarang )?lebih suka (?P<obj>.+)"),
]
_DISLIKE = [
    _f(r"\bi (?:really )?(?:don't|do not|dont|no longer|never) (?:really )?(?:like|enjoy|eat|love) (?P<obj>.+)"),
    _f(r"\bi (?:really )?(?:hate|dislike|can't stand|cannot stand|detest) (?P<obj>.+)"),
    _f(
        rf"\b{_ME_ID} (?:nggak|gak|ga|tidak|enggak|ndak|udah gak|udah nggak) (?:terlalu )?(?:suka|doyan)"
        r"(?: sama)? (?P<obj>.+)"
    ),
    _f(rf"\b{_ME_ID} benci(?: sama| banget sama)? (?P<obj>.+)"),
]
_LIKE = [
    _f(r"\bi (?:really |also |do |just |absolutely )?(?:like|love|enjoy|adore) (?P<obj>.+)"),
    _f(
        rf"\b{_ME_ID} (?:juga )?(?:suka banget sama|suka banget|suka sama|suka|senang|doyan|cinta)"
        r"(?! banget\b) (?P<obj>.+)"
    ),
]
_PEOPLE = [
    _f(rf"\bmy (?P<rel>{_REL_EN})(?:'s name)? is (?:called |named )?{_NAME}"),
    _f(rf"^{_NAME} is my (?P<rel>{_REL_EN})\b"),
    _f(rf"\bmy (?P<rel>{_REL_EN}),? {_NAME}"),
    _f(rf"\b(?P<rel>{_REL_ID}){_MY_ID} (?:namanya |bernama |adalah |itu |si )?{_NAME}"),
]
_LIVE = [
    _f(r"\bi (?:live|stay|am living|'m living|have moved|moved|just moved|'ve moved) (?:in|to) (?P<obj>.+)"),
    _f(rf"\b{_ME_ID} (?:tinggal|tinggalnya|menetap) di (?P<obj>.+)"),
    _f(rf"\b{_ME_ID} (?:udah |sudah |baru )?pindah ke (?P<obj>.+)"),
    _f(r"\brumah(?:ku| saya| aku) (?:ada )?di (?P<obj>.+)"),
]
_WORK = [
    _f(r"\bi (?:work|am working|'m working|now work|started working|just started working) (?:at|for) (?P<obj>.+)"),
    _f(r"\bi(?:'ve| have)? (?:got|started|have) a (?:new )?job (?:at|with) (?P<obj>.+)"),
    _f(rf"\b{_ME_ID} (?:kerja|bekerja|ngantor) (?:di|untuk|buat) (?P<obj>.+)"),
]
_ALLERGY = [
    _f(r"\bi(?:'m| am) (?:very |severely |really |a bit )?allergic to (?P<obj>.+)"),
    _f(r"\bi have an? (?P<obj>.+?) allergy\b"),
    _f(rf"\b{_ME_ID} (?:punya )?alergi(?: sama| terhadap| dengan)? (?P<obj>.+)"),
]
_BIRTHDAY_OF = [
    _f(rf"^{_NAME}'s birthday is (?:on )?(?P<obj>.+)"),
    _f(rf"\bulang tahun(?:nya)? {_NAME} (?:tanggal |tgl |pada |itu )?(?P<obj>.+)"),
]
_BIRTHDAY = [
    _f(r"\bmy birthday is (?:on )?(?P<obj>.+)"),
    _f(r"\bi was born on (?P<obj>.+)"),
    _f(rf"\bulang tahun{_MY_ID} (?:tanggal |tgl |pada |itu )?(?P<obj>.+)"),
    _f(rf"\b{_ME_ID} lahir (?:tanggal|tgl|pada) (?P<obj>.+)"),
]


# What a person named before is said to be, with a pronoun in their place ("my daughter
# is Nay and she's allergic to peanuts", "anakku Nay, dia alergi kacang", "my sister Sari,
# her birthday is 12 May", "ulang tahunnya 3 Juni"): (relation, sentence, pattern, slot).
_THEY = r"(?:she|he|they|dia|beliau)"
_THEIR = r"(?:her|his|their)"
_THEIR_FACTS: tuple[tuple[str, str, re.Pattern[str], str | None], ...] = (
    ("allergic_to", "{who} is allergic to {obj}", re.compile(
        rf"\b{_THEY}(?:'s| is| are|'re)? (?:very |severely |really |a bit )?allergic to (?P<obj>.+)", re.I), None),
    ("allergic_to", "{who} is allergic to {obj}", re.compile(
        rf"\b{_THEY} (?:punya )?alergi(?: sama| terhadap| dengan)? (?P<obj>.+)", re.I), None),
    ("allergic_to", "{who} is allergic to {obj}", re.compile(
        rf"\b{_THEIR} (?:allergy|allergies) (?:is|are|:) (?P<obj>.+)", re.I), None),
    ("likes", "{who} likes {obj}", re.compile(
        rf"\b{_THEY} (?:really )?(?:likes|loves|like|love|suka banget sama|suka banget|suka sama|suka) (?P<obj>.+)",
        re.I), None),
    ("lives_in", "{who} lives in {obj}", re.compile(
        rf"\b{_THEY} (?:lives|live|tinggal) (?:in|di) (?P<obj>.+)", re.I), None),
    ("works_at", "{who} works at {obj}", re.compile(
        rf"\b{_THEY} (?:works|work|kerja|bekerja) (?:at|for|di) (?P<obj>.+)", re.I), None),
    ("favourite", "{who}'s favourite {cat} is {obj}", re.compile(
        rf"\b{_THEIR} (?:all[- ]time )?favou?rite (?P<cat>[a-z]+) (?:is|was|=) (?P<obj>.+)", re.I), "favourite"),
    ("favourite", "{who}'s favourite {cat} is {obj}", re.compile(
        r"\b(?P<cat>makanan|minuman|lagu|film|tempat|warna|buku) (?:favorit|favorite|kesukaan)(?:nya| dia) "
        r"(?:adalah |itu )?(?P<obj>.+)", re.I), "favourite"),
    ("birthday", "{who}'s birthday is {obj}", re.compile(
        rf"\b{_THEIR} (?:birthday|bday|b-day)(?:'s| is| falls on| was)? (?:on |in )?(?P<obj>.+)", re.I),
        "birthday"),
    ("birthday", "{who}'s birthday is {obj}", re.compile(
        rf"\b(?:{_THEY} (?:was )?born (?:on|in) |(?:ulang tahun|ultah)(?:nya| dia) "
        r"(?:tanggal |tgl |pada |itu |jatuh )*)(?P<obj>.+)", re.I), "birthday"),
)  # fmt: skip
# Someone merely mentioned, never said to be anyone's relation ("I had lunch with Sari",
# "ketemu Budi tadi", "Sari said ..."): a name a pronoun after it may stand for. Only a
# capitalised name after words that take a person: "with Senayan" is not said of a place.
_MENTIONED = [
    re.compile(
        r"\b(?:with|met|meet|meeting|saw|seen|see|visited|visit|called|call|texted|text|phoned|told|asked|into|"
        r"[Ss]ama|[Bb]areng|[Dd]engan|[Kk]etemu|[Kk]etemuan sama|[Nn]elpon|[Jj]enguk|[Nn]gobrol sama)"
        r" (?P<name>[A-Z][\w'-]{1,30})\b"
    ),
    re.compile(r"(?:^|, |\band )(?P<name>[A-Z][\w'-]{1,30}) (?:said|says|told me|bilang|cerita)\b"),
]
_NOT_MENTIONED = _words(
    "i me you him her them it my the a an ava zee yori rafal monday tuesday wednesday thursday friday saturday "
    "sunday senin selasa rabu kamis jumat sabtu minggu january february march april may june july august september "
    "october november december januari februari maret mei juni juli agustus oktober desember google spotify gmail"
)
# Who a pronoun can stand for: "her" is not the brother, "his" not the sister ("dia" anyone).
_FEMALE = frozenset(("wife", "girlfriend", "sister", "mother", "daughter", "aunt", "grandmother", "niece"))
_MALE = frozenset(("husband", "boyfriend", "brother", "father", "son", "uncle", "grandfather", "nephew"))
_SHE = re.compile(r"\b(?:she|her|she's)\b", re.I)
_HE = re.compile(r"\b(?:he|his|him|he's)\b", re.I)


def _clean(raw: str) -> str | None:
    """The object a pattern caught, cut at the clause's end and stripped of fillers."""
    text = _OBJECT_END.split(raw, maxsplit=1)[0].strip(" '\"")
    changed = True
    while changed and text:
        changed = False
        lowered = text.lower()
        for filler in _FILLERS:
            if lowered.endswith(" " + filler) or lowered == filler:
                text = text[: -len(filler)].strip()
                changed = True
                break
    for article in ("the ", "a ", "an ", "some ", "sama ", "ke "):
        if text.lower().startswith(article):
            text = text[len(article) :]
    words = text.split()
    if not words or len(words) > _WORDS_MAX or len(text) > NAME_CHARS_MAX:
        return None
    if words[0].lower() in _NOT_OBJECTS or words[0].lower() in ("to", "being", "when"):
        return None
    return text


def _name_in(caught: str) -> str:
    """The capitalised words a name pattern caught (the patterns ignore case); '' if none."""
    words = caught.split()
    name = " ".join(words[: next((i for i, w in enumerate(words) if not w[0].isupper()), len(words))])
    return "" if not name or name.split()[0].lower() in _NOT_NAMES | {"my", "i"} else name


def _items(raw: str) -> list[str]:
    """The things a list names ("peanuts, shrimp and eggs"), each cleaned; at most five."""
    clause = _LIST_END.split(raw, maxsplit=1)[0]
    items = [_clean(part) for part in _LIST_SEPARATOR.split(clause) if part.strip()]
    return [item for item in items if item][:_ITEMS_MAX]


def _food_or(text: str, otherwise: EntityType) -> EntityType:
    words = set(re.findall(r"[\w-]+", text.lower()))
    return "food" if words & _FOODS else otherwise


def _category(raw: str) -> tuple[str, EntityType]:
    """A favourite's category in English, and the type of thing it holds."""
    cat = raw.lower().strip()
    cat = _CATEGORY_ID.get(cat, cat)
    words = set(cat.split())
    if words & _FOOD_CATEGORIES or cat in ("thing to eat", "thing to drink"):
        return ("food" if "eat" in words else cat), "food"
    if words & _PLACE_CATEGORIES:
        return cat, "place"
    return cat, "thing"


class _Reader:
    """Reads one person's messages in order, remembering what it already claimed."""

    def __init__(self, person_name: str, known: Sequence[Claim]) -> None:
        self.name = person_name or "The person"
        self.claims: list[Claim] = []
        self._known = list(known)
        # People named without a claim about them, in reading order: (message id, claims
        # made before the mention, name).
        self._mentioned: list[tuple[str, int, str]] = []

    def _claim(
        self, message_id: str, relation: str, obj: Mention, text: str, slot: str | None, subject: Mention = SELF
    ) -> None:
        self.claims.append(Claim(message_id, subject, relation, obj, text, slot))

    def _latest_favourite(self, obj: str) -> Claim | None:
        """The favourite a switch to `obj` replaces: the latest of the same kind if `obj`
        is a known food, else the latest favourite of any kind."""
        favourites = [c for c in self._known + self.claims if c.relation == "favourite" and c.subject.is_self]
        if _food_or(obj, "thing") == "food":
            favourites = [c for c in favourites if c.object.type == "food"] or favourites
        return favourites[-1] if favourites else None

    def read(self, message: KnowledgeMessage) -> None:
        for found in _CLAUSE.finditer(message.text.replace("\u2019", "'")):
            sentence = found.group().strip()
            clause = sentence.rstrip(".!?;\n ")
            if not clause or sentence.endswith("?") or _QUESTION_START.match(clause):
                continue
            for rule in _RULES:
                if rule(self, message.id, clause):
                    break
            self._people(message.id, clause)
            self._mentions(message.id, clause)
            self._theirs(message.id, clause)

    def favourite(self, message_id: str, clause: str) -> bool:
        for pattern in _FAVOURITE:
            match = pattern.search(clause)
            if match and (obj := _clean(match.group("obj"))):
                if not match.group("cat") and _food_or(obj, "thing") != "food":
                    continue
                cat, kind = _category(match.group("cat") or "food")
                kind = _food_or(obj, kind) if kind == "thing" else kind
                text = f"{self.name}'s favourite {cat} is {obj}"
                self._claim(message_id, "favourite", Mention(obj, kind), text, f"favourite:{cat}")
                return True
        return False

    def switch(self, message_id: str, clause: str) -> bool:
        for pattern in _SWITCH:
            match = pattern.search(clause)
            if match and (obj := _clean(match.group("obj"))):
                earlier = self._latest_favourite(obj)
                if earlier is None or earlier.slot is None:
                    text = f"{self.name} prefers {obj}"
                    self._claim(message_id, "prefers", Mention(obj, _food_or(obj, "preference")), text, None)
                    return True
                cat = earlier.slot.partition(":")[2]
                text = f"{self.name}'s favourite {cat} is {obj}"
                self._claim(message_id, "favourite", Mention(obj, earlier.object.type), text, earlier.slot)
                return True
        return False

    def taste(self, message_id: str, clause: str) -> bool:
        for relation, patterns in (("dislikes", _DISLIKE), ("likes", _LIKE)):
            for pattern in patterns:
                match = pattern.search(clause)
                if match and (objects := _items(match.group("obj"))):
                    for thing in objects:
                        text = f"{self.name} {relation} {thing}"
                        slot = f"taste:{thing.casefold()}"
                        self._claim(message_id, relation, Mention(thing, _food_or(thing, "thing")), text, slot)
                    return True
        return False

    def place(self, message_id: str, clause: str) -> bool:
        for relation, patterns, kind, phrase in (
            ("lives_in", _LIVE, "place", "lives in"),
            ("works_at", _WORK, "organisation", "works at"),
        ):
            for pattern in patterns:
                match = pattern.search(clause)
                if match and (obj := _clean(match.group("obj"))):
                    entity_type: EntityType = "place" if kind == "place" else "organisation"
                    self._claim(
                        message_id, relation, Mention(obj, entity_type), f"{self.name} {phrase} {obj}", relation
                    )
                    return True
        return False

    def allergy(self, message_id: str, clause: str) -> bool:
        for pattern in _ALLERGY:
            match = pattern.search(clause)
            if match and (objects := _items(match.group("obj"))):
                for thing in objects:
                    text = f"{self.name} is allergic to {thing}"
                    self._claim(message_id, "allergic_to", Mention(thing, _food_or(thing, "thing")), text, None)
                return True
        return False

    def birthday(self, message_id: str, clause: str) -> bool:
        for pattern in _BIRTHDAY_OF:
            match = pattern.search(clause)
            if match and (name := _name_in(match.group("name"))) and (obj := _clean(match.group("obj"))):
                subject = Mention(name, "person")
                self._claim(
                    message_id, "birthday", Mention(obj, "event"), f"{name}'s birthday is {obj}", "birthday", subject
                )
                return True
        for pattern in _BIRTHDAY:
            match = pattern.search(clause)
            if match and (obj := _clean(match.group("obj"))):
                text = f"{self.name}'s birthday is {obj}"
                self._claim(message_id, "birthday", Mention(obj, "event"), text, "birthday")
                return True
        return False

    def _referent(self, message_id: str, clause: str) -> Mention | None:
        """The person a pronoun stands for: the last one named in this message, else in the
        messages read before it, else the newest one the graph knows, whose relation does
        not contradict the pronoun ("her" is never the brother)."""
        female, male = bool(_SHE.search(clause)), bool(_HE.search(clause))
        people: list[tuple[str, str, str]] = []  # (message id, name, relation), in reading order
        mentions = iter(self._mentioned)
        mention = next(mentions, None)
        for i, claim in enumerate(self.claims):
            while mention is not None and mention[1] <= i:
                people.append((mention[0], mention[2], self._relation_of(mention[2])))
                mention = next(mentions, None)
            if (person := _person_of(claim)) is not None:
                people.append((claim.message_id, *person))
        while mention is not None:
            people.append((mention[0], mention[2], self._relation_of(mention[2])))
            mention = next(mentions, None)
        here = [p for p in people if p[0] == message_id]
        before = [p for p in people if p[0] != message_id]
        known = [(c.message_id, *p) for c in self._known if (p := _person_of(c)) is not None]
        for _, name, relation in (*reversed(here), *reversed(before), *known):
            if (female and relation in _MALE) or (male and relation in _FEMALE):
                continue
            return Mention(name, "person")
        return None

    def _relation_of(self, name: str) -> str:
        """What a mentioned name is to the person, where a claim says ("Dimas" the brother)."""
        for claim in (*reversed(self.claims), *self._known):
            if claim.object.type == "person" and claim.object.name.casefold() == name.casefold():
                return claim.relation
        return ""

    def _mentions(self, message_id: str, clause: str) -> None:
        """Remember people the clause only mentions ("lunch with Sari"), for a pronoun after."""
        found = sorted((m.start("name"), m.group("name")) for pattern in _MENTIONED for m in pattern.finditer(clause))
        for _, name in found:
            if name.lower() not in _NOT_MENTIONED:
                self._mentioned.append((message_id, len(self.claims), name))

    def _theirs(self, message_id: str, clause: str) -> None:
        """A fact about someone named before (in this message or earlier), said with a pronoun."""
        for relation, template, pattern, slot in _THEIR_FACTS:
            match = pattern.search(clause)
            if not match:
                continue
            objects = [o for o in [_clean(match.group("obj"))] if o] if slot else _items(match.group("obj"))
            who = self._referent(message_id, clause) if objects else None
            if who is None:
                return
            said = match.groupdict().get("cat")
            cat, of_kind = _category(said) if said else ("", "thing")
            for thing in objects:
                kind: EntityType = "event" if relation == "birthday" else _food_or(thing, of_kind)
                text = template.format(who=who.name, obj=thing, cat=cat)
                self._claim(message_id, relation, Mention(thing, kind), text, f"{slot}:{cat}" if cat else slot, who)
            return

    def _people(self, message_id: str, clause: str) -> None:
        # Every person the clause names ("my sister is Rina and my brother is Dimas"), once each.
        named: set[str] = set()
        for pattern in _PEOPLE:
            for match in pattern.finditer(clause):
                name = _name_in(match.group("name"))
                if not name or name in named:
                    continue
                named.add(name)
                rel = match.group("rel").lower()
                relation = _RELATIONS.get(rel, rel)
                slot = f"relation:{relation}" if relation in _EXCLUSIVE_RELATIONS else None
                text = f"{name} is {self.name}'s {relation}"
                self._claim(message_id, relation.replace(" ", "_"), Mention(name, "person"), text, slot)


def _person_of(claim: Claim) -> tuple[str, str] | None:
    """The other person a claim names, with what they are to the person ('' when unsaid)."""
    if claim.object.type == "person" and not claim.object.is_self:
        return claim.object.name, claim.relation
    if not claim.subject.is_self and claim.subject.type == "person":
        return claim.subject.name, ""
    return None


_RULES: tuple[Callable[[_Reader, str, str], bool], ...] = (
    _Reader.favourite,
    _Reader.switch,
    _Reader.allergy,
    _Reader.birthday,
    _Reader.place,
    _Reader.taste,
)


def read_claims(*, person_name: str, messages: Sequence[KnowledgeMessage], known: Sequence[Claim] = ()) -> list[Claim]:
    """Claims in the person's own messages (synchronous: the offline model reads them too)."""
    reader = _Reader(person_name, known)
    for message in messages:
        if message.author == "human":
            reader.read(message)
    return reader.claims


def person_meant(*, clause: str, messages: Sequence[KnowledgeMessage]) -> str | None:
    """Who "her", "his" or "dia" in `clause` stands for, from the people the person's own
    messages named (the latest that fits), or None: the offline model asks the graph
    about that person ("what's her birthday?" after "my sister Sari, ...")."""
    reader = _Reader("", ())
    for message in messages:
        if message.author == "human":
            reader.read(message)
    who = reader._referent("", clause)
    return who.name if who is not None else None


# How a message telling of one's day opens ("I had lunch with Sari", "tadi ketemu Budi"),
# as opposed to a request naming someone ("call Budi", "book a table with Sari").
_TELLING = re.compile(
    r"^\s*(?:i|we|me and \w+|just|had|met|bumped|ran|saw|tadi|kemarin|barusan|aku|gue|abis|habis|ketemu)\b", re.I
)

_ASKING = re.compile(
    r"\b(?:want|wanna|need|would like|'d like|please|pls|can you|could you|mau|pengen|pingin|tolong|bisa)\b", re.I
)


def only_mentioned(text: str) -> str | None:
    """The person a statement about one's day mentions ("I had lunch with Sari": Sari), or
    None: for an answer to it instead of "I can't do that"."""
    if not _TELLING.match(text) or text.rstrip().endswith("?") or _ASKING.search(text):
        return None
    reader = _Reader("", ())
    reader._mentions("", text)
    names = [name for _, _, name in reader._mentioned]
    return names[-1] if names else None


def about_someone(text: str) -> bool:
    """Does the text state a fact about someone by pronoun alone ("his birthday is 1 June")?"""
    return any(pattern.search(text) for _, _, pattern, _ in _THEIR_FACTS)


class RuleExtractor:
    """The `Extractor` that needs no model: regular expressions over the person's words."""

    async def extract(
        self, *, person_name: str, messages: Sequence[KnowledgeMessage], known: Sequence[Claim]
    ) -> Extraction:
        return Extraction(read_claims(person_name=person_name, messages=messages, known=known))
