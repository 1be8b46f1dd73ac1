import HotspotCore
import Testing

/// Issue 17: SSIDs print escaped, so a newline cannot break the summary and stray bytes stay visible.
@Suite("SSID printable form")
struct SSIDTextTests {
    @Test("newline, quote, backslash, tab and control characters are escaped; the form stays on one line")
    func textIsEscaped() {
        #expect(SSIDText.printable("Cafe\nLumiere") == "\"Cafe\\nLumiere\"")
        #expect(SSIDText.printable("a\"b\\c\td\u{1}\u{2028}") == "\"a\\\"b\\\\c\\td\\u{1}\\u{2028}\"")
        #expect(SSIDText.printable("Café ☕") == "\"Café ☕\"")
        #expect(!SSIDText.printable("x\r\ny").contains("\n"))
    }

    @Test("bytes that are not UTF-8 print as \\xNN; valid sequences around them as text")
    func bytesAreEscaped() {
        #expect(SSIDText.printable(bytes: [0x43, 0xFF, 0x61, 0xC3, 0xA9, 0xC3]) == "\"C\\xffaé\\xc3\"")
        #expect(SSIDText.printable(bytes: [0xE2, 0x82]) == "\"\\xe2\\x82\"")
        #expect(SSIDText.printable(bytes: [0x0A]) == "\"\\n\"")
    }
}

/// Issue 17: an SSID is 0-32 bytes, not text; identity compares the bytes, display is lossy like Apple's.
@Suite("SSIDs as bytes")
struct SSIDBytesTests {
    @Test("hex both ways (golden), odd or non-hex digits refused")
    func hex() throws {
        let cafe = SSID(bytes: [0x43, 0x61, 0x66, 0xE9])
        #expect(cafe.hex == "436166e9")
        #expect(SSID(hex: "436166e9") == cafe)
        #expect(SSID(hex: "436166E9") == cafe)
        #expect(SSID("Café").hex == "436166c3a9")
        #expect(SSID(hex: "436") == nil)
        #expect(SSID(hex: "43zz") == nil)
        #expect(SSID(hex: "")?.bytes == [])
    }

    @Test("text is lossy for bytes that are not UTF-8 (U+FFFD), exact otherwise; isUTF8 says which")
    func lossyText() {
        let latin1 = SSID(bytes: [0x43, 0x61, 0x66, 0xE9])
        #expect(!latin1.isUTF8)
        #expect(latin1.text == "Caf\u{FFFD}")
        #expect(latin1.utf8Text == nil)
        #expect(latin1.printable == "\"Caf\\xe9\"")
        let utf8 = SSID("Café")
        #expect(utf8.isUTF8 && utf8.utf8Text == "Café")
        #expect(SSID(bytes: Array("Café".utf8)) == utf8)
        #expect(SSID(bytes: [0x41, 0x00, 0x42]).isUTF8)   // NUL is valid UTF-8
    }

    @Test("identity by bytes: two SSIDs with the same lossy text, or canonically equivalent text, are two networks")
    func identityByBytes() {
        let a = SSID(bytes: [0x43, 0x61, 0x66, 0xE9])
        let b = SSID(bytes: [0x43, 0x61, 0x66, 0xE8])
        #expect(a.text == b.text)
        #expect(a != b)
        #expect(Set([a, b]).count == 2)
        // "é" precomposed and "e" + combining acute: equal as Swift Strings, two SSIDs on the air.
        let composed = SSID("Caf\u{E9}"), decomposed = SSID("Cafe\u{301}")
        #expect("Caf\u{E9}" == "Cafe\u{301}")
        #expect(composed != decomposed)
        let ia = NetworkIdentity(rawSSID: a, security: .open), ib = NetworkIdentity(rawSSID: b, security: .open)
        #expect(ia != ib && ia.ssid == ib.ssid)
        let na = HotspotNetwork(rawSSID: a, bssid: "02:00:00:00:00:01"), nb = HotspotNetwork(rawSSID: b, bssid: "02:00:00:00:00:01")
        #expect(!na.sameEntry(as: nb))
        #expect(na.identity == ia)
    }

    @Test("the cache and the auto-join exclude list key on the bytes")
    func cacheKeysOnBytes() {
        let a = HotspotNetwork(rawSSID: SSID(bytes: [0x43, 0x61, 0x66, 0xE9]), bssid: "02:00:00:00:00:01")
        let b = HotspotNetwork(rawSSID: SSID(bytes: [0x43, 0x61, 0x66, 0xE8]), bssid: "02:00:00:00:00:02")
        var cache: [NetworkIdentity: CacheEntry] = [:]
        cache[a.identity] = .notCaptive
        #expect(cache[b.identity] == nil)
        cache[b.identity] = .helper("com.example")
        #expect(cache.count == 2)
        let excluded: Set<NetworkIdentity> = [a.identity]
        #expect(excluded.contains(a.identity) && !excluded.contains(b.identity))
    }

    @Test("inline: plain SSIDs as themselves, anything that could break a line quoted and escaped (golden)")
    func inline() {
        #expect(SSIDText.inline("Cafe Lumiere") == "Cafe Lumiere")
        #expect(SSIDText.inline("Café ☕") == "Café ☕")
        #expect(SSIDText.inline("Evil\nSSID") == "\"Evil\\nSSID\"")
        #expect(SSIDText.inline("\u{1B}[31mred") == "\"\\u{1b}[31mred\"")
        #expect(SSIDText.inline("say \"hi\"") == "\"say \\\"hi\\\"\"")
        #expect(SSIDText.inline("<script>") == "<script>")   // HTML is the HTML writer's to escape
        #expect(SSIDText.inline(SSID(bytes: [0x43, 0x61, 0x66, 0xE9])) == "\"Caf\\xe9\"")
        #expect(SSIDText.inline(SSID(bytes: [0x9B, 0x32, 0x4A])) == "\"\\x9b2J\"")
        #expect(SSIDText.inline(SSID(bytes: [0xC2, 0x9B])) == "\"\\u{9b}\"")   // C1 CSI as UTF-8
    }
}
