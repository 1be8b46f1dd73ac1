import Glibc
import HotspotSystem
import Netlink
import Testing

/// Golden bytes of the generic netlink requests (no root, no radio needed).
@Suite("generic netlink encoders (golden bytes)")
struct GenericGoldenTests {
    @Test func hwsimNewRadio() {
        let message = HwsimMessages.newRadio(family: 0x1e, name: "hslr0", channels: 1, permanentAddress: MACAddress("02:00:00:00:00:01"))
        // nlmsghdr len 56 type 0x1e REQUEST; genlmsghdr cmd NEW_RADIO(4) version 1;
        // RADIO_NAME(17) "hslr0\0", CHANNELS(9) 1, PERM_ADDR(22) 02:00:00:00:00:01, DESTROY_RADIO_ON_CLOSE(16) flag
        let expected = "38000000" + "1e00" + "0100" + "0000000000000000"
            + "04010000"
            + "0a001100" + "68736c7230000000"
            + "08000900" + "01000000"
            + "0a001600" + "020000000001" + "0000"
            + "04001000"
        #expect(message.hex == expected)
    }

    @Test func hwsimDeleteRadioByName() {
        #expect(HwsimMessages.deleteRadio(family: 0x1e, name: "hslr0").hex
            == "20000000" + "1e00" + "0100" + "0000000000000000" + "05010000" + "0a001100" + "68736c7230000000")
    }

    @Test func nl80211SetWiphyNetns() {
        // cmd SET_WIPHY_NETNS(49) version 0; ATTR_WIPHY(1) 3; ATTR_NETNS_FD(219) 9
        #expect(NL80211Messages.setWiphyNamespace(family: 0x1f, wiphy: 3, namespaceFD: 9).hex
            == "24000000" + "1f00" + "0100" + "0000000000000000" + "31000000" + "08000100" + "03000000" + "0800db00" + "09000000")
    }

    @Test func nl80211SetTxPowerOfInterface() {
        // cmd SET_WIPHY(2) version 0; ATTR_IFINDEX(3) 7; TX_POWER_SETTING(97) FIXED(2); TX_POWER_LEVEL(98) 500 mBm (0x1f4)
        #expect(NL80211Messages.setTxPower(family: 0x1f, interfaceIndex: 7, mBm: 500).hex
            == "2c000000" + "1f00" + "0100" + "0000000000000000" + "02000000"
            + "08000300" + "07000000" + "08006100" + "02000000" + "08006200" + "f4010000")
        // automatic: no level; a negative level is sent as its two's complement (the kernel reads s32)
        #expect(NL80211Messages.setTxPower(family: 0x1f, interfaceIndex: 7, mBm: nil).hex
            == "24000000" + "1f00" + "0100" + "0000000000000000" + "02000000" + "08000300" + "07000000" + "08006100" + "00000000")
        #expect(NL80211Messages.setTxPower(family: 0x1f, interfaceIndex: 7, mBm: -100).hex.hasSuffix("08006200" + "9cffffff"))
    }

    @Test func nl80211WiphyDumpAsksForSplitDump() {
        let message = NL80211Messages.dumpWiphys(family: 0x1f)
        #expect(message.flags == 0x301)
        #expect(message.hex.hasSuffix("01000000" + "0400ae00"))
    }
}
