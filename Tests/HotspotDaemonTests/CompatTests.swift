// The command handler below is written exactly as in the field articles (seeds/article-working-with-hotspot-helper.txt
// and article-using-hotspot-helper.txt), with only `import NetworkExtension` changed to `import NEHotspotHelperCompat`.
import NEHotspotHelperCompat
import Testing

func getBestScanResult(_ list: [NEHotspotNetwork]) -> NEHotspotNetwork? {
    list.first { $0.ssid == "CafeSecure" }
}

/// Registers the article's helper with hotspotd (once per process: it is the only test that registers in-process).
func registerArticleHelper(socketPath: String) -> Bool {
    // --- from the article, unchanged except for the socket option (the lab's daemon is not at the default path) ---
    let options: [String: NSObject] = [kNEHotspotHelperOptionDisplayName : "Join this WIFI" as NSObject,
                                       kHotspotHelperOptionSocketPath: socketPath as NSObject,
                                       kHotspotHelperOptionIdentifier: "com.mobiarch" as NSObject]
    let queue: DispatchQueue = DispatchQueue(label: "com.mobiarch", attributes: DispatchQueue.Attributes.concurrent)

    NSLog("Started wifi scanning.")

    return NEHotspotHelper.register(options: options, queue: queue) { (cmd: NEHotspotHelperCommand) in
        NSLog("Received command: \(cmd.commandType.rawValue)")

        if cmd.commandType == NEHotspotHelperCommandType.filterScanList {
            //Get all available hotspots
            var list: [NEHotspotNetwork] = cmd.networkList!
            //Figure out the hotspot you wish to connect to
            let desiredNetwork : NEHotspotNetwork? = getBestScanResult(list)

            if let network = desiredNetwork {
                network.setPassword("password") //Set the WIFI password

                let response = cmd.createResponse(NEHotspotHelperResult.success)

                response.setNetworkList([network])
                response.deliver() //Respond back with the filtered list
            }
        } else if cmd.commandType == NEHotspotHelperCommandType.evaluate {
            if let network = cmd.network {
                //Set high confidence for the network
                network.setConfidence(NEHotspotHelperConfidence.high)

                let response = cmd.createResponse(NEHotspotHelperResult.success)
                response.setNetwork(network)
                response.deliver() //Respond back
            }
        } else if cmd.commandType == NEHotspotHelperCommandType.authenticate {
            //Perform custom authentication and respond back with success
            // if all is OK
            let response = cmd.createResponse(NEHotspotHelperResult.success)
            response.deliver() //Respond back
        }
    }
}
