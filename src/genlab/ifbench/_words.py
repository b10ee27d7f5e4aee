"""Small word lists used by the kwargs samplers and instruction builders (our own choice of words)."""

NOUNS = (
    "river", "garden", "window", "engine", "letter", "market", "planet", "bridge", "forest", "island",
    "candle", "mirror", "harbor", "ticket", "pillow", "rocket", "violin", "basket", "anchor", "castle",
    "desert", "finger", "helmet", "jacket", "kettle", "ladder", "meadow", "needle", "orange", "pepper",
    "quartz", "saddle", "tunnel", "valley", "wallet", "yogurt", "zipper", "camera", "dragon", "falcon",
    "glacier", "hammer", "lantern", "marble", "nectar", "oyster", "puzzle", "rabbit", "silver", "timber",
    "weather", "music", "coffee", "summer", "winter", "science", "history", "journey", "kitchen", "ocean",
)

SENTENCES = (
    "The quick brown fox jumps over the lazy dog near the quiet river bank.",
    "Write a short note to your neighbour about the noisy party last weekend.",
    "Explain how a bicycle gear system helps a rider climb steep hills.",
    "Describe the smell of fresh bread in a small village bakery at dawn.",
    "List three reasons why people enjoy walking in the mountains every summer.",
)

LANGUAGES = {
    "en": "English", "es": "Spanish", "pt": "Portuguese", "ar": "Arabic", "hi": "Hindi", "fr": "French",
    "ru": "Russian", "de": "German", "ja": "Japanese", "it": "Italian", "bn": "Bengali", "uk": "Ukrainian",
    "th": "Thai", "ur": "Urdu", "ta": "Tamil", "te": "Telugu", "bg": "Bulgarian", "ko": "Korean",
    "pl": "Polish", "he": "Hebrew", "fa": "Persian", "vi": "Vietnamese", "ne": "Nepali", "sw": "Swahili",
    "kn": "Kannada", "mr": "Marathi", "gu": "Gujarati", "pa": "Punjabi", "ml": "Malayalam", "fi": "Finnish",
}

PERSON_NAMES = (
    "Emma", "Liam", "Sophia", "Jackson", "Olivia", "Noah", "Ava", "Lucas", "Isabella", "Mason", "Mia",
    "Ethan", "Charlotte", "Alexander", "Amelia", "Benjamin", "Harper", "Leo", "Zoe", "Daniel", "Chloe",
    "Samuel", "Lily", "Matthew", "Grace", "Owen", "Abigail", "Gabriel", "Ella", "Jacob", "Scarlett",
    "Nathan", "Victoria", "Elijah", "Layla", "Nicholas", "Audrey", "David", "Hannah", "Christopher",
    "Penelope", "Thomas", "Nora", "Andrew", "Aria", "Joseph", "Claire", "Ryan", "Stella", "Jonathan",
)


def ordinal(n: int) -> str:
    """1 -> '1st', 2 -> '2nd', 11 -> '11th'."""
    if 10 <= n % 100 <= 20:
        suf = "th"
    else:
        suf = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suf}"
